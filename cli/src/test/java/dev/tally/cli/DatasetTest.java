package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The dataset check: the line limit at its edge, repeated ids, and a file edited between the check and the read. */
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
    assertThat(Dataset.read(lineOf(Dataset.MAX_LINE_BYTES)).count()).isEqualTo(1);
    assertThatThrownBy(() -> Dataset.read(lineOf(Dataset.MAX_LINE_BYTES + 1)))
        .isInstanceOf(DatasetException.class).hasMessageContaining(":1").hasMessageContaining("longer than the limit");
  }

  @Test
  void aRepeatedIdIsRefusedWithTheSecondLineAndTheFirstEvenFarApart() throws Exception {
    java.util.List<String> lines = new java.util.ArrayList<>();
    for (int i = 0; i < 5_000; i++) {
      lines.add("{\"id\":\"c" + i + "\"}");
    }
    lines.add("{\"id\":\"c17\"}");
    lines.add("{\"id\":\"c4\"}");
    Path file = Files.write(dir.resolve("dup.jsonl"), lines);
    assertThatThrownBy(() -> Dataset.read(file))
        .isInstanceOf(DatasetException.class)
        .hasMessageContaining(file + ":5001").hasMessageContaining("duplicate id \"c17\" (first on line 18)");
  }

  @Test
  void theCountAndDigestAreThoseOfTheCasesAndAReadGivesThemAgainInOrder() throws Exception {
    Path file = Files.write(dir.resolve("d.jsonl"), java.util.List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    Dataset d = Dataset.read(file);
    assertThat(d.count()).isEqualTo(2);
    assertThat(d.digest()).isEqualTo(Dataset.read(file).digest()).hasSize(64);
    try (Dataset.Reading r = d.open()) {
      assertThat(r.next().caseId()).isEqualTo("a");
      assertThat(r.next().caseId()).isEqualTo("b");
      assertThat(r.next()).isNull();
    }
    Files.write(file, java.util.List.of("{\"id\":\"b\"}", "{\"id\":\"a\"}"));
    assertThat(Dataset.read(file).digest()).isNotEqualTo(d.digest());
  }

  @Test
  void aFileEditedBetweenTheCheckAndTheReadIsRefusedAtTheReadsEnd() throws Exception {
    Path file = Files.write(dir.resolve("d.jsonl"), java.util.List.of("{\"id\":\"a\"}", "{\"id\":\"b\"}"));
    Dataset d = Dataset.read(file);
    Files.write(file, java.util.List.of("{\"id\":\"a\"}", "{\"id\":\"b\",\"edited\":true}"));
    try (Dataset.Reading r = d.open()) {
      assertThat(r.next().caseId()).isEqualTo("a");
      assertThat(r.next().caseId()).isEqualTo("b");
      assertThatThrownBy(r::next).isInstanceOf(dev.tally.core.cases.CaseSourceException.class)
          .hasMessageContaining("changed while it was read");
    }
  }

  @Test
  void aFileThatCannotBeReadIsSaidInWordsNotByRepeatingItsName() throws Exception {
    Path missing = dir.resolve("nope.jsonl");
    assertThatThrownBy(() -> Dataset.read(missing)).isInstanceOf(DatasetException.class)
        .hasMessage(missing + ": cannot read: no such file");
    Path csv = dir.resolve("nope.csv");
    assertThatThrownBy(() -> Dataset.read(csv)).hasMessage(csv + ": cannot read: no such file");
    Path directory = java.nio.file.Files.createDirectory(dir.resolve("cases.jsonl"));
    assertThatThrownBy(() -> Dataset.read(directory)).hasMessageStartingWith(directory + ": cannot read: ")
        .hasMessageNotContaining(directory + ": cannot read: " + directory);
  }
}
