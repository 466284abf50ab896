package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProcessFilesTest {
  @TempDir Path dir;

  @Test
  void onlyTheFilesOfProcessesThatAreGoneAreRemoved() throws Exception {
    Process deadProcess = new ProcessBuilder("true").start();
    deadProcess.waitFor();
    long dead = deadProcess.pid();
    long self = ProcessHandle.current().pid();
    long selfStart = ProcessHandle.current().info().startInstant().orElseThrow().toEpochMilli();
    Path mine = Files.writeString(dir.resolve(ProcessFiles.ownPrefix("upload-") + "1.ndjson"), "x");
    Path deadOnes = Files.writeString(dir.resolve("upload-" + dead + "-" + selfStart + "-2.ndjson"), "x");
    // The same pid, another start: a pid taken again (a container's pid 1 after a restart).
    Path reused = Files.writeString(dir.resolve("upload-" + self + "-" + (selfStart - 60_000) + "-3.ndjson"), "x");
    Path pidOnlyLiving = Files.writeString(dir.resolve("upload-" + self + "-4.ndjson"), "x");
    Path pidOnlyDead = Files.writeString(dir.resolve("upload-" + dead + "-5.ndjson"), "x");
    Path beforePids = Files.writeString(dir.resolve("upload-8172638172.ndjson"), "x");
    Path stranger = Files.writeString(dir.resolve("upload-notes.txt"), "x");
    Path other = Files.writeString(dir.resolve("cases-" + dead + "-6.part"), "x");

    assertThat(ProcessFiles.removeLeftovers(dir, "upload-")).isEqualTo(4);
    assertThat(mine).exists();
    assertThat(pidOnlyLiving).exists();
    assertThat(stranger).as("not named by the rule").exists();
    assertThat(other).as("another prefix").exists();
    assertThat(deadOnes).doesNotExist();
    assertThat(reused).doesNotExist();
    assertThat(pidOnlyDead).doesNotExist();
    assertThat(beforePids).doesNotExist();
  }
}
