package dev.tally.coordinator.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AtomicFileTest {
  @TempDir Path dir;

  @Test
  void aFileIsReplacedWholeAndNoTemporaryFileStays() throws Exception {
    Path f = dir.resolve("summary.json");
    Files.writeString(f, "old");
    AtomicFile.write(f, "new".getBytes(StandardCharsets.UTF_8));
    assertThat(Files.readString(f)).isEqualTo("new");
    try (var listing = Files.list(dir)) {
      assertThat(listing).containsExactly(f);
    }
  }

  /** A writer killed midway (kill -9) left its temporary file; the next write of the target removes it. */
  @Test
  void aTemporaryFileOfAProcessThatIsGoneIsRemovedByTheNextWriteAndOneOfALiveProcessIsKept() throws Exception {
    Process gone = new ProcessBuilder("true").start();
    gone.waitFor();
    Path f = dir.resolve("results.jsonl");
    Path leftover = Files.writeString(dir.resolve(".results.jsonl." + gone.pid() + ".tmp"), "half");
    Path live = Files.writeString(dir.resolve(".results.jsonl." + ProcessHandle.current().parent().orElseThrow().pid() + ".tmp"), "being written");
    Path other = Files.writeString(dir.resolve(".results.jsonl.x.tmp"), "not ours");
    Path otherFile = Files.writeString(dir.resolve(".summary.json." + gone.pid() + ".tmp"), "another target's");
    AtomicFile.write(f, "new".getBytes(StandardCharsets.UTF_8));
    assertThat(leftover).doesNotExist();
    assertThat(live).exists();
    assertThat(other).exists();
    assertThat(otherFile).as("another target's is left for its own next write").exists();
  }

  @Test
  void aLinkIsWrittenThroughAndStaysALink() throws Exception {
    Path real = dir.resolve("real.jsonl");
    Files.writeString(real, "old");
    Path link = Files.createSymbolicLink(dir.resolve("link.jsonl"), real);
    AtomicFile.write(link, "new".getBytes(StandardCharsets.UTF_8));
    assertThat(Files.isSymbolicLink(link)).isTrue();
    assertThat(Files.readString(real)).isEqualTo("new");
  }

  /** --out /dev/stdout, --summary /dev/null: a stream is written into, never replaced by a regular file. */
  @Test
  void aPipeIsWrittenIntoAndNotReplaced() throws Exception {
    Path fifo = dir.resolve("pipe");
    assertThat(new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor()).isZero();
    CompletableFuture<String> read = CompletableFuture.supplyAsync(() -> {
      try {
        return Files.readString(fifo);
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    AtomicFile.write(fifo, "through the pipe\n".getBytes(StandardCharsets.UTF_8));
    assertThat(read.get(30, TimeUnit.SECONDS)).isEqualTo("through the pipe\n");
    assertThat(Files.isRegularFile(fifo)).as("still a pipe").isFalse();
    assertThat(Files.exists(fifo)).isTrue();
  }
}
