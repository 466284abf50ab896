package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.core.detect.PhiAccrualDetector;
import dev.tally.core.schedule.WorkerHandle;
import java.io.UncheckedIOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The server's lifecycle and its settings' rules. */
class WorkerServerTest {

  @Test
  void refusesAHeartbeatIntervalThatDoesNotFitThreeTimesInTheWindow() {
    assertThatThrownBy(() -> WorkerServer.Settings.builder()
            .heartbeatInterval(Duration.ofSeconds(2)).detectionWindow(Duration.ofSeconds(5)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("heartbeat interval 2000ms must fit at least 3 times in the detection window 5000ms");
  }

  @Test
  void acceptsAnIntervalThatFitsExactlyThreeTimes() {
    WorkerServer.Settings s = WorkerServer.Settings.builder()
        .heartbeatInterval(Duration.ofMillis(100)).detectionWindow(Duration.ofMillis(300)).build();
    assertThat(s.reapCheckPeriod()).isEqualTo(Duration.ofMillis(30));
  }

  @Test
  void defaultsAreTheProductsPhiDetectorAt500MsCheckedEvery100Ms() {
    WorkerServer.Settings s = WorkerServer.Settings.defaults();
    assertThat(s.heartbeatInterval()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.detectorFactory().apply(0)).isInstanceOf(PhiAccrualDetector.class);
    assertThat(s.detectionWindow()).isBetween(Duration.ofSeconds(2), Duration.ofSeconds(3)); // the README's "about 2.5 s"
    assertThat(s.maxFrameBytes()).isEqualTo(4 * 1024 * 1024);
    assertThat(s.reapCheckPeriod()).isEqualTo(WorkerServer.Settings.MAX_REAP_CHECK_PERIOD).isEqualTo(Duration.ofMillis(100));
    assertThat(s.dispatchWindow(4)).isEqualTo(8);
  }

  @Test
  void aWindowAloneIsTheFixedDetectorOverIt() {
    WorkerServer.Settings s = WorkerServer.Settings.builder().detectionWindow(Duration.ofSeconds(5)).build();
    assertThat(s.detectorFactory().apply(0)).isInstanceOf(FixedTimeoutDetector.class);
    assertThat(s.detectionWindow()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void noPrefetchMakesTheWindowTheSlotsAlone() {
    WorkerServer.Settings s = WorkerServer.Settings.builder().prefetch(WorkerServer.Settings.NO_PREFETCH).build();
    assertThat(s.dispatchWindow(1)).isEqualTo(1);
    assertThat(s.dispatchWindow(4)).isEqualTo(4);
    assertThat(s.toString()).contains("prefetch none");
    assertThat(WorkerServer.Settings.builder().prefetch(2).build().dispatchWindow(1)).isEqualTo(3);
  }

  @Test
  void refusesANegativePrefetchOtherThanNoneAndASubMillisecondInterval() {
    assertThatThrownBy(() -> WorkerServer.Settings.builder().prefetch(WorkerServer.Settings.NO_PREFETCH - 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got -2");
    assertThatThrownBy(() -> WorkerServer.Settings.builder().heartbeatInterval(Duration.ofNanos(1500)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("whole number of milliseconds");
    assertThatThrownBy(() -> WorkerServer.Settings.builder().heartbeatInterval(Duration.ofMillis(9)))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("heartbeatInterval must be at least 10ms, got 9ms");
  }

  @Test
  void bindsAnEphemeralPortAndRefusesOneInUse() throws Exception {
    RecordingEvents events = new RecordingEvents();
    try (WorkerServer server = WorkerServer.start("127.0.0.1", 0, WorkerServer.Settings.defaults(), events)) {
      assertThat(server.port()).isPositive();
      assertThatThrownBy(() -> WorkerServer.start("127.0.0.1", server.port(), WorkerServer.Settings.defaults(), events))
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining("cannot bind the worker port");
    }
  }

  @Test
  void closeEndsEverySessionAndReportsEachLost() throws Exception {
    RecordingEvents events = new RecordingEvents();
    WorkerServer server = WorkerServer.start("127.0.0.1", 0, WorkerServer.Settings.defaults(), events);
    try (WirePeer a = WirePeer.joined(server.port(), "a", 1); WirePeer b = WirePeer.joined(server.port(), "b", 1)) {
      await().atMost(Duration.ofSeconds(5)).until(() -> events.joined("a") != null && events.joined("b") != null);
      WorkerHandle ha = events.joined("a");
      WorkerHandle hb = events.joined("b");

      server.close();

      await().atMost(Duration.ofSeconds(5)).until(() -> a.closedByServer() && b.closedByServer());
      assertThat(events.lost(ha)).singleElement().extracting(RecordingEvents.Event::reason)
          .isEqualTo("coordinator shutting down");
      assertThat(events.lost(hb)).singleElement().extracting(RecordingEvents.Event::reason)
          .isEqualTo("coordinator shutting down");
      server.close(); // idempotent
    }
  }
}
