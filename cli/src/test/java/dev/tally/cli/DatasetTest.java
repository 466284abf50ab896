package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dataset reader's line limit, exactly at its edge. */
class DatasetTest {
  @TempDir Path dir;

  /** A dataset line of exactly {@code bytes} bytes, newline not counted. */
  private Path lineOf(int bytes) throws Exception {
    String head = "{\"id\":\"a\",\"pad\":\"";
    String tail = "\"}";
    String line = head + "x".repeat(bytes - head.length() - tail.length()) + tail;
    assertThat(line.getBytes(StandardCharsets.UTF_8)).hasSize(bytes);
    return Files.writeString(dir.resolve("d" + bytes + ".jsonl"), line + "\n");
  }

  @Test
  void aLineOfExactlyTheLimitIsReadAndOneByteMoreIsRefusedWithItsLine() throws Exception {
    assertThat(Dataset.read(lineOf(Dataset.MAX_LINE_BYTES)).cases()).hasSize(1);
    assertThatThrownBy(() -> Dataset.read(lineOf(Dataset.MAX_LINE_BYTES + 1)))
        .isInstanceOf(DatasetException.class).hasMessageContaining(":1").hasMessageContaining("longer than the limit");
  }
}
