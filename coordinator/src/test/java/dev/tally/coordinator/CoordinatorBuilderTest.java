package dev.tally.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.core.detect.MissedHeartbeatsDetector;
import dev.tally.core.detect.PhiAccrualDetector;
import dev.tally.core.store.Store;
import dev.tally.store.SqliteStore;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The builder's defaults (the README's), its detector rule, and what start takes and gives back. */
class CoordinatorBuilderTest {
  @TempDir Path dir;

  @Test
  void theDefaultsArePhiAt500MsHeartbeatsAndPrefetchAsManyAsTheSlots() {
    CoordinatorBuilder b = Coordinator.builder();
    assertThat(b.detectorSettings().kind()).isEqualTo(DetectorSettings.Kind.PHI);
    assertThat(b.detectorSettings().heartbeatInterval()).isEqualTo(Duration.ofMillis(500));
    WorkerServer.Settings s = b.workerServerSettings();
    assertThat(s.heartbeatInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.detectorFactory().apply(0)).isInstanceOf(PhiAccrualDetector.class);
    assertThat(s.prefetch()).isZero();
  }

  @Test
  void speculationIsOnByDefaultForEveryEvaluatorButThePaidModelOneUnlessAskedFor() {
    CoordinatorBuilder b = Coordinator.builder();
    assertThat(b.speculation().mode()).isEqualTo(dev.tally.core.schedule.SpeculationPolicy.Mode.AUTO);
    assertThat(b.speculation().copies("exec")).isTrue();
    assertThat(b.speculation().copies("noop")).isTrue();
    assertThat(b.speculation().copies("model")).isFalse();
    assertThat(b.speculation(dev.tally.core.schedule.SpeculationPolicy.Mode.ON).speculation().copies("model")).isTrue();
    assertThat(b.speculation(dev.tally.core.schedule.SpeculationPolicy.Mode.OFF).speculation().copies("exec")).isFalse();
  }

  @Test
  void theWorkerServersOwnDefaultsAreTheBuildersNotAnotherDetector() {
    WorkerServer.Settings fromBuilder = Coordinator.builder().workerServerSettings();
    WorkerServer.Settings serverDefaults = WorkerServer.Settings.defaults();
    assertThat(serverDefaults.detectorFactory().apply(0)).isInstanceOf(PhiAccrualDetector.class);
    assertThat(serverDefaults.detectorFactory().apply(0).describe()).isEqualTo(fromBuilder.detectorFactory().apply(0).describe());
    assertThat(serverDefaults.heartbeatInterval()).isEqualTo(fromBuilder.heartbeatInterval());
    assertThat(serverDefaults.detectionWindow()).isEqualTo(fromBuilder.detectionWindow());
    assertThat(serverDefaults.prefetch()).isEqualTo(fromBuilder.prefetch());
    assertThat(serverDefaults.maxFrameBytes()).isEqualTo(fromBuilder.maxFrameBytes());
  }

  @Test
  void aWindowAloneSelectsTheFixedDetectorAndAMissedWindowCountsIntervals() {
    DetectorSettings fixed = Coordinator.builder().detectionWindow(Duration.ofSeconds(2)).detectorSettings();
    assertThat(fixed.kind()).isEqualTo(DetectorSettings.Kind.FIXED);
    assertThat(fixed.detectionWindow()).isEqualTo(Duration.ofSeconds(2));
    assertThat(fixed.drainWindow()).isEqualTo(FixedTimeoutDetector.defaultDrainAfter(Duration.ofSeconds(2)));
    assertThat(Coordinator.builder().detectionWindow(Duration.ofSeconds(2)).workerServerSettings().detectorFactory().apply(0))
        .isInstanceOf(FixedTimeoutDetector.class);

    DetectorSettings missed = Coordinator.builder().detector(DetectorSettings.Kind.MISSED)
        .heartbeatInterval(Duration.ofMillis(200)).detectionWindow(Duration.ofSeconds(2)).detectorSettings();
    assertThat(missed.kind()).isEqualTo(DetectorSettings.Kind.MISSED);
    assertThat(missed.detectionWindow()).isEqualTo(Duration.ofSeconds(2)); // 10 missed intervals of 200 ms
    assertThat(missed.drainWindow()).isEqualTo(Duration.ofMillis(200).multipliedBy(
        (long) (10 * MissedHeartbeatsDetector.DEFAULT_DRAIN_AFTER_MISSED / MissedHeartbeatsDetector.DEFAULT_CONVICT_AFTER_MISSED)));
  }

  @Test
  void refusesAWindowForPhiAndAnIntervalThatDoesNotFitThreeTimes() {
    assertThatThrownBy(() -> Coordinator.builder().detector(DetectorSettings.Kind.PHI).detectionWindow(Duration.ofSeconds(3)).detectorSettings())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("phi derives its window from the heartbeat history");
    assertThatThrownBy(() -> Coordinator.builder().heartbeatInterval(Duration.ofSeconds(2)).detectionWindow(Duration.ofSeconds(5))
            .workerServerSettings())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 3 times");
    assertThatThrownBy(() -> Coordinator.builder().heartbeatInterval(Duration.ofMillis(9)))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("heartbeatInterval must be at least 10ms, got 9ms");
    assertThatThrownBy(() -> Coordinator.builder().prefetch(WorkerServer.Settings.MAX_PREFETCH + 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("prefetch must be between 0 and");
  }

  @Test
  void aStoreFileIsLockedWhileItsCoordinatorRunsAndFreedWhenItCloses() throws Exception {
    Path db = dir.resolve("t.db");
    try (Coordinator first = Coordinator.builder().storeFile(db).start()) {
      assertThat(first.port()).isPositive();
      assertThat(first.store().runs()).isEmpty();
      assertThatThrownBy(() -> Coordinator.builder().storeFile(db).start())
          .isInstanceOfSatisfying(CoordinatorBuilder.StartException.class,
              e -> assertThat(e.reason()).isEqualTo(CoordinatorBuilder.StartException.Reason.STORE_LOCKED))
          .hasMessageContaining(CoordinatorLock.lockFile(db).toString());
    }
    try (Coordinator second = Coordinator.builder().storeFile(db).start()) {
      assertThat(second.store().storeId()).isNotEmpty();
    }
  }

  @Test
  void aFileThatIsNotAStoreIsRefusedAndItsLockReleased() throws Exception {
    Path garbage = dir.resolve("garbage.db");
    Files.writeString(garbage, "this is not sqlite".repeat(100));
    assertThatThrownBy(() -> Coordinator.builder().storeFile(garbage).start())
        .isInstanceOfSatisfying(CoordinatorBuilder.StartException.class,
            e -> assertThat(e.reason()).isEqualTo(CoordinatorBuilder.StartException.Reason.STORE_UNUSABLE))
        .hasMessageContaining("is not a usable Tally store");
    try (CoordinatorLock lock = CoordinatorLock.tryAcquire(garbage)) {
      assertThat(lock).as("the failed start let its lock go").isNotNull();
    }
  }

  @Test
  void aPortInUseIsRefusedAndTheStoreAndLockAreLetGo() throws Exception {
    Path db = dir.resolve("t.db");
    try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      assertThatThrownBy(() -> Coordinator.builder().storeFile(db)
              .listen(new InetSocketAddress("127.0.0.1", taken.getLocalPort())).start())
          .isInstanceOfSatisfying(CoordinatorBuilder.StartException.class,
              e -> assertThat(e.reason()).isEqualTo(CoordinatorBuilder.StartException.Reason.CANNOT_LISTEN))
          .hasMessageContaining("cannot listen for workers on 127.0.0.1:" + taken.getLocalPort());
    }
    try (Coordinator c = Coordinator.builder().storeFile(db).start()) {
      assertThat(c.port()).isPositive();
    }
  }

  @Test
  void aStoreTheCallerOpenedIsNeitherLockedNorClosed() throws Exception {
    Path db = dir.resolve("t.db");
    try (Store store = SqliteStore.open(db)) {
      try (Coordinator c = Coordinator.builder().store(store).start()) {
        assertThat(c.store()).isSameAs(store);
        try (CoordinatorLock lock = CoordinatorLock.tryAcquire(db)) {
          assertThat(lock).isNotNull();
        }
      }
      assertThat(store.runs()).as("still open").isEmpty();
    }
    assertThatThrownBy(() -> Coordinator.builder().start()).isInstanceOf(IllegalStateException.class).hasMessageContaining("needs a store");
  }

  @Test
  void aCoordinatorOnItsStoreFileReleasesTheKeyHoldsOfEarlierProcessesAndKeepsCompletedKeys() throws Exception {
    Path db = dir.resolve("keys.db");
    long now = System.currentTimeMillis();
    try (dev.tally.store.SqliteStore store = dev.tally.store.SqliteStore.open(db)) {
      store.claimKey("anonymous", "held-by-a-dead-request", null, now, now + 3_600_000);
    }
    try (Coordinator c = Coordinator.builder().storeFile(db).start()) {
      assertThat(c.store().claimKey("anonymous", "held-by-a-dead-request", null, now, now + 30_000))
          .as("a retry after the restart gets the key at once").isInstanceOf(dev.tally.core.store.KeyClaim.Claimed.class);
      assertThat(c.idempotencyTtl()).isEqualTo(CoordinatorBuilder.DEFAULT_IDEMPOTENCY_TTL);
      assertThat(c.keyHold()).isEqualTo(CoordinatorBuilder.DEFAULT_KEY_HOLD);
    }
    assertThatThrownBy(() -> Coordinator.builder().keyHold(java.time.Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theObserversGivenToTheBuilderHearTheSchedulersCommits() throws Exception {
    java.util.concurrent.atomic.AtomicInteger commits = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicLong lastRun = new java.util.concurrent.atomic.AtomicLong();
    dev.tally.core.schedule.SchedulerObserver o = new dev.tally.core.schedule.SchedulerObserver() {
      @Override
      public void committed(int evals, long commitNanos) {
        commits.incrementAndGet();
      }

      @Override
      public void runCounters(long runId, dev.tally.core.store.RunCounters counters) {
        lastRun.set(runId);
      }
    };
    try (Coordinator c = Coordinator.builder().storeFile(dir.resolve("o.db")).observer(o).start()) {
      long runId = c.store().createRun(new dev.tally.core.store.RunSpec("d", new dev.tally.core.EvaluatorSpec("noop",
          java.util.Map.of(), java.time.Duration.ofMinutes(1)), 3), java.util.List.of(new dev.tally.core.CaseRecord(0, "a", "{}")));
      c.cancel(runId).get(30, java.util.concurrent.TimeUnit.SECONDS);
      org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30))
          .untilAsserted(() -> assertThat(lastRun.get()).isEqualTo(runId));
      assertThat(commits.get()).isPositive();
    }
  }
}
