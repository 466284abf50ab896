package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class IdempotencyKeyHeaderTest {
  @Test
  void aQuotedKeyAndTheSameKeyBareAreOneKey() {
    assertThat(IdempotencyKeyHeader.parse(List.of("\"8e03978e-40d5\""), true)).isEqualTo("8e03978e-40d5");
    assertThat(IdempotencyKeyHeader.parse(List.of("8e03978e-40d5"), true)).isEqualTo("8e03978e-40d5");
    assertThat(IdempotencyKeyHeader.parse(List.of("\"a \\\"b\\\" \\\\c\""), true)).isEqualTo("a \"b\" \\c");
  }

  @Test
  void aMissingKeyIsRefusedOnlyWhereRequired() {
    assertThat(IdempotencyKeyHeader.parse(List.of(), false)).isNull();
    assertThatThrownBy(() -> IdempotencyKeyHeader.parse(List.of(), true))
        .isInstanceOfSatisfying(ProblemException.class, e -> {
          assertThat(e.type()).isEqualTo(ProblemType.MISSING_IDEMPOTENCY_KEY);
          assertThat(e.toProblem("/x").header()).isEqualTo("Idempotency-Key");
        });
  }

  @Test
  void badKeysAreRefusedSayingWhy() {
    for (String bad : List.of("\"\"", "\"abc", "\"ab\"c\"", "\"a\\nb\"", "tab\there", "é", "x".repeat(256))) {
      assertThatThrownBy(() -> IdempotencyKeyHeader.parse(List.of(bad), true)).as(bad)
          .isInstanceOfSatisfying(ProblemException.class, e -> assertThat(e.type()).isEqualTo(ProblemType.INVALID_IDEMPOTENCY_KEY));
    }
    assertThat(IdempotencyKeyHeader.parse(List.of("x".repeat(255)), true)).hasSize(255);
    assertThatThrownBy(() -> IdempotencyKeyHeader.parse(List.of("a", "b"), true)).hasMessageContaining("2 Idempotency-Key headers");
  }
}
