package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SettingsTest {
  @Test
  void theTokenIsNeverInWhatTheSettingsOrTheAuthSayOfThemselves() {
    ApiServer.Settings s = ApiServer.Settings.builder().bind("127.0.0.1", 8080).token("t0ken-never-shown").build();
    assertThat(s.toString()).doesNotContain("t0ken-never-shown").contains("bearer token required");
    assertThat(BearerAuth.of("t0ken-never-shown").toString()).doesNotContain("t0ken");
    assertThat(BearerAuth.of("t0ken-never-shown").scope()).startsWith("sha256:").doesNotContain("t0ken");
  }

  @Test
  void badValuesAreRefusedSayingWhat() {
    assertThatThrownBy(() -> ApiServer.Settings.builder().bind("127.0.0.1", 70_000)).hasMessageContaining("0 to 65535");
    assertThatThrownBy(() -> ApiServer.Settings.builder().token("two words")).hasMessageContaining("without spaces");
    assertThatThrownBy(() -> ApiServer.Settings.builder().tls(java.nio.file.Path.of("c.pem"), null)).hasMessageContaining("both");
  }
}
