package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class OutputCaptureTest {
  private static void write(OutputCapture c, String s) {
    c.append(s.toCharArray(), 0, s.length());
  }

  @Test
  void keepsOnlyTheLastCharacters() {
    OutputCapture c = new OutputCapture(5, 0);
    write(c, "abc");
    write(c, "defgh");
    assertThat(c.tail()).isEqualTo("defgh");
  }

  @Test
  void remembersTheLastNonEmptyLineAcrossWritesAndWithoutATrailingNewline() {
    OutputCapture c = new OutputCapture(100, 100);
    write(c, "one\n{\"verd");
    write(c, "ict\": 1}\n\n   \n");
    assertThat(c.lastNonEmptyLine()).isEqualTo("{\"verdict\": 1}");
    write(c, "last");
    c.finish();
    assertThat(c.lastNonEmptyLine()).isEqualTo("last");
  }

  @Test
  void aLastLineLongerThanTheLimitIsNotRemembered() {
    OutputCapture c = new OutputCapture(10, 8);
    write(c, "short\n0123456789abcdef\n");
    assertThat(c.lastNonEmptyLine()).isNull();
  }

  @Test
  void joinedTailsFitTheLimitAndStderrKeepsAtLeastHalf() {
    assertThat(OutputCapture.joinTails("out", "err", 100)).isEqualTo("out\nerr");
    String joined = OutputCapture.joinTails("o".repeat(100), "e".repeat(100), 21);
    assertThat(joined).hasSize(21).isEqualTo("o".repeat(10) + "\n" + "e".repeat(10));
    assertThat(OutputCapture.joinTails("o".repeat(100), "ee", 10)).isEqualTo("o".repeat(7) + "\nee");
  }
}
