package dev.tally.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One coordinator per store, whatever the store is called. */
class CoordinatorLockTest {
  @TempDir Path dir;

  @Test
  void aSecondCoordinatorIsRefusedThroughAnyNameOfTheSameStore() throws Exception {
    Path db = dir.resolve("tally.db");
    Files.writeString(db, "");
    Path link = Files.createSymbolicLink(dir.resolve("alias.db"), db);
    Files.createDirectories(dir.resolve("sub"));
    try (CoordinatorLock first = CoordinatorLock.tryAcquire(db)) {
      assertThat(first).isNotNull();
      assertThat(CoordinatorLock.tryAcquire(link)).as("through a symbolic link").isNull();
      assertThat(CoordinatorLock.tryAcquire(dir.resolve("sub/../tally.db"))).as("through a roundabout path").isNull();
    }
    try (CoordinatorLock again = CoordinatorLock.tryAcquire(link)) {
      assertThat(again).as("free once the first let go").isNotNull();
    }
  }

  @Test
  void aStoreNotYetCreatedIsNamedByItsRealDirectory() throws Exception {
    Path realDir = Files.createDirectories(dir.resolve("real"));
    Path linkedDir = Files.createSymbolicLink(dir.resolve("linked"), realDir);
    assertThat(CoordinatorLock.lockFile(linkedDir.resolve("new.db"))).isEqualTo(realDir.toRealPath().resolve("new.db-lock"));
  }
}
