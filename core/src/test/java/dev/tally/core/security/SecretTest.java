package dev.tally.core.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SecretTest {
  private static final String TOKEN = "s3cr3t-token-0123456789abcdef";

  @Test
  void printsItsDescriptionNeverItsValue() {
    Secret secret = Secret.of(TOKEN, "worker token from /etc/tally/worker.token");
    assertThat(secret.toString()).isEqualTo("worker token from /etc/tally/worker.token").doesNotContain(TOKEN);
    assertThat(String.valueOf(secret)).doesNotContain(TOKEN);
    assertThat(secret.description()).doesNotContain(TOKEN);
  }

  @Test
  void matchesOnlyItsOwnValue() {
    Secret secret = Secret.of(TOKEN, "t");
    assertThat(secret.matches(TOKEN)).isTrue();
    assertThat(secret.matches(TOKEN + "x")).isFalse();
    assertThat(secret.matches(TOKEN.substring(1))).isFalse();
    assertThat(secret.matches(TOKEN.toUpperCase())).isFalse();
    assertThat(secret.matches("")).isFalse();
    assertThat(secret.matches(null)).isFalse();
  }

  @Test
  void isNotEqualToAnotherInstanceWithTheSameValue() {
    // equals would be a second, not constant-time comparison of values
    assertThat(Secret.of(TOKEN, "a")).isNotEqualTo(Secret.of(TOKEN, "a"));
  }

  @Test
  void refusesValuesThatCannotTravelAsATokenWithoutQuotingThem() {
    assertThatThrownBy(() -> Secret.of("", "worker token from f")).hasMessage("worker token from f is empty");
    assertThatThrownBy(() -> Secret.of("abc def", "worker token from f"))
        .hasMessageStartingWith("worker token from f has a space at position 4 of 7").hasMessageNotContaining("abc");
    assertThatThrownBy(() -> Secret.of("abc\ndef", "t")).hasMessageContaining("a line break at position 4");
    assertThatThrownBy(() -> Secret.of("abcé", "t")).hasMessageContaining("U+00E9 at position 4");
    assertThatThrownBy(() -> Secret.of("a".repeat(Secret.MAX_CHARS + 1), "t")).hasMessageContaining("at most " + Secret.MAX_CHARS);
    assertThat(Secret.of("a".repeat(Secret.MAX_CHARS), "t").reveal()).hasSize(Secret.MAX_CHARS);
    assertThat(Secret.of("!~", "t").reveal()).isEqualTo("!~");
  }

  @Test
  void scopeDigestIsStablePerValueAndHidesIt() {
    String digest = Secret.of(TOKEN, "a").scopeDigest();
    assertThat(digest).hasSize(64).matches("[0-9a-f]+").doesNotContain(TOKEN);
    assertThat(Secret.of(TOKEN, "b").scopeDigest()).isEqualTo(digest);
    assertThat(Secret.of(TOKEN + "x", "a").scopeDigest()).isNotEqualTo(digest);
  }
}
