package dev.tally.coordinator.net;

import static dev.tally.coordinator.net.WorkerConnectionTest.assignment;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.awaitility.Awaitility.await;

import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AckStatus;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.RunConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The scheduler's side of a session: what RemoteWorker's calls put on the wire. */
class RemoteWorkerTest {
  private final RecordingEvents events = new RecordingEvents();
  private WorkerServer server;
  private WirePeer peer;

  private WorkerHandle join(WorkerServer.Settings settings, int slots) throws Exception {
    server = WorkerServer.start("127.0.0.1", 0, settings, events);
    peer = WirePeer.joined(server.port(), "w", slots);
    return await().atMost(Duration.ofSeconds(5)).until(() -> events.joined("w"), h -> h != null);
  }

  private WorkerHandle join() throws Exception {
    return join(WorkerServer.Settings.builder().detectionWindow(Duration.ofSeconds(30)).build(), 2);
  }

  @AfterEach
  void tearDown() throws Exception {
    if (peer != null) {
      peer.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void assignSendsARunConfigOncePerRunThenOneAssignPerAssignment() throws Exception {
    WorkerHandle handle = join();
    EvaluatorSpec exec = new EvaluatorSpec("exec", Map.of("cmd", "python3 -m test {id}"), Duration.ofMillis(2500));
    Assignment a1 = new Assignment(11, 1, 7, 1, "c1", "{\"id\":\"c1\",\"é\":1}", exec);
    Assignment a2 = new Assignment(12, 1, 8, 2, "c2", "{\"id\":\"c2\"}", exec);
    Assignment a3 = new Assignment(13, 1, 9, 1, "c3", "{\"id\":\"c3\"}", exec);
    Assignment b1 = assignment(21, 2);

    handle.assign(List.of(a1, a2));
    handle.assign(List.of(a3, b1));

    RunConfig config = peer.next().getRunConfig();
    assertThat(config).isEqualTo(RunConfig.newBuilder().setRunId(1).setEvaluator("exec")
        .putOptions("cmd", "python3 -m test {id}").setCaseTimeoutMillis(2500).build());
    Assign first = peer.next().getAssign();
    assertThat(first).isEqualTo(Assign.newBuilder().setJobId(11).setRunId(1).setToken(7).setAttempt(1)
        .setCaseId("c1").setCaseJson(com.google.protobuf.ByteString.copyFromUtf8("{\"id\":\"c1\",\"é\":1}")).build());
    assertThat(peer.next().getAssign().getJobId()).isEqualTo(12);
    assertThat(peer.next().getAssign().getJobId()).isEqualTo(13);
    assertThat(peer.next().getRunConfig().getRunId()).isEqualTo(2);
    assertThat(peer.next().getAssign().getJobId()).isEqualTo(21);
    await().during(Duration.ofMillis(200)).until(() -> peer.pending() == 0);
  }

  @Test
  void acknowledgeSendsOneResultAckWithEveryEntry() throws Exception {
    WorkerHandle handle = join();
    handle.acknowledge(List.of(new Ack(1, 10, AckStatus.RECORDED), new Ack(2, -1L, AckStatus.FENCED),
        new Ack(3, 12, AckStatus.DUPLICATE), new Ack(4, 13, AckStatus.RELEASED)));

    assertThat(peer.next().getResultAck()).isEqualTo(ResultAck.newBuilder()
        .addEntries(AckEntry.newBuilder().setJobId(1).setToken(10).setStatus(AckEntry.Status.RECORDED))
        .addEntries(AckEntry.newBuilder().setJobId(2).setToken(-1L).setStatus(AckEntry.Status.FENCED))
        .addEntries(AckEntry.newBuilder().setJobId(3).setToken(12).setStatus(AckEntry.Status.DUPLICATE))
        .addEntries(AckEntry.newBuilder().setJobId(4).setToken(13).setStatus(AckEntry.Status.RELEASED))
        .build());
    await().during(Duration.ofMillis(200)).until(() -> peer.pending() == 0);
  }

  @Test
  void abandonSendsAnAbandonFrame() throws Exception {
    WorkerHandle handle = join();
    handle.abandon(5, 50, "lease revoked");
    Envelope e = peer.next();
    assertThat(e.getAbandon().getJobId()).isEqualTo(5);
    assertThat(e.getAbandon().getToken()).isEqualTo(50);
    assertThat(e.getAbandon().getReason()).isEqualTo("lease revoked");
  }

  @Test
  void closeSaysGoodbyeAndTheSessionIsLostWithTheReason() throws Exception {
    WorkerHandle handle = join();
    handle.close("draining the fleet");
    assertThat(peer.next().getGoodbye().getReason()).isEqualTo("closed by coordinator: draining the fleet");
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
    await().atMost(Duration.ofSeconds(5)).until(() -> events.lost(handle).size() == 1);
    assertThat(events.lost(handle).get(0).reason()).isEqualTo("closed by coordinator: draining the fleet");
  }

  @Test
  void sendingOnAnEndedSessionIsSilentlyDropped() throws Exception {
    WorkerHandle handle = join();
    peer.close();
    await().atMost(Duration.ofSeconds(5)).until(() -> events.lost(handle).size() == 1);
    assertThatCode(() -> {
      handle.assign(List.of(assignment(1, 1)));
      handle.acknowledge(List.of(new Ack(1, 1, AckStatus.RECORDED)));
      handle.abandon(1, 1, "x");
      handle.close("again");
    }).doesNotThrowAnyException();
    server.close();
    assertThatCode(() -> handle.assign(List.of(assignment(2, 1)))).doesNotThrowAnyException();
    assertThat(events.lost(handle)).hasSize(1);
  }

  @Test
  void theDispatchWindowIsTwiceTheSlotsByDefault() throws Exception {
    WorkerHandle handle = join(WorkerServer.Settings.defaults(), 3);
    assertThat(handle.dispatchWindow()).isEqualTo(6);
    assertThat(handle.workerId()).isEqualTo("w");
    assertThat(handle.name()).isEqualTo("w-host");
  }

  @Test
  void theDispatchWindowIsTheSlotsPlusAnExplicitPrefetch() throws Exception {
    WorkerHandle handle = join(WorkerServer.Settings.builder().prefetch(1).build(), 3);
    assertThat(handle.dispatchWindow()).isEqualTo(4);
  }

  @Test
  void anAssignmentTooLargeForAFrameIsReportedFailedInsteadOfSent() throws Exception {
    WorkerHandle handle = join(WorkerServer.Settings.builder().maxFrameBytes(1024).build(), 1);
    Assignment huge = new Assignment(1, 1, 10, 1, "big", "x".repeat(2000),
        new EvaluatorSpec("noop", Map.of(), Duration.ofSeconds(1)));
    Assignment small = assignment(2, 1);

    handle.assign(List.of(huge, small));

    assertThat(peer.next().getRunConfig().getRunId()).isEqualTo(1);
    assertThat(peer.next().getAssign().getJobId()).isEqualTo(2);
    await().atMost(Duration.ofSeconds(5)).until(() -> events.reports(handle).size() == 1);
    AttemptReport report = events.reports(handle).get(0);
    assertThat(report.jobId()).isEqualTo(1);
    assertThat(report.token()).isEqualTo(10);
    assertThat(report.failure().kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(report.failure().detail()).contains("above the frame limit of 1024 bytes");
    assertThat(events.lost(handle)).isEmpty();
  }

  @net.jqwik.api.Property(tries = 2_000)
  void suspicionIsRoundedToHundredths(@net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = -1e6, max = 1e6) double x) {
    String text = RemoteWorker.twoDecimals(x);
    assertThat(text).matches("-?\\d+\\.\\d\\d");
    assertThat(Double.parseDouble(text)).isCloseTo(x, org.assertj.core.data.Offset.offset(0.005 + 1e-9));
  }

  @org.junit.jupiter.api.Test
  void suspicionReadsAsTheFormatterWouldWriteItAtTheEdges() {
    for (double x : new double[] {0, -0.0, 0.125, 7.995, 8, 0.6, 12.345678, 1e300, -3.14159, Double.NaN, Double.POSITIVE_INFINITY}) {
      assertThat(RemoteWorker.twoDecimals(x)).as("%s", x).isEqualTo(String.format(java.util.Locale.ROOT, "%.2f", x));
    }
  }
}
