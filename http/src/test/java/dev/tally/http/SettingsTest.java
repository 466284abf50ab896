package dev.tally.http;

import dev.tally.core.security.Secret;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SettingsTest {
  @Test
  void theTokenIsNeverInWhatTheSettingsOrTheAuthSayOfThemselves() {
    ApiServer.Settings s = ApiServer.Settings.builder().bind("127.0.0.1", 8080).token(Secret.of("t0ken-never-shown", "API token")).build();
    assertThat(s.toString()).doesNotContain("t0ken-never-shown").contains("bearer token required");
    assertThat(BearerAuth.of(Secret.of("t0ken-never-shown", "API token")).toString()).doesNotContain("t0ken");
    assertThat(BearerAuth.of(Secret.of("t0ken-never-shown", "API token")).scope()).startsWith("sha256:").doesNotContain("t0ken");
  }

  @Test
  void badValuesAreRefusedSayingWhat() {
    assertThatThrownBy(() -> ApiServer.Settings.builder().bind("127.0.0.1", 70_000)).hasMessageContaining("0 to 65535");
  }
}
