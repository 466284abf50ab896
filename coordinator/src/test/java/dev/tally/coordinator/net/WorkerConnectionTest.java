package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.Assignment;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.coordinator.net.RecordingEvents.Event;
import dev.tally.coordinator.net.RecordingEvents.Kind;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Drain;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.Outcome;
import dev.tally.protocol.Result;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The connection actor over real sockets: joining, reaping, hostile input, superseding, results. */
class WorkerConnectionTest {
  private static final Duration INTERVAL = Duration.ofMillis(100);
  /** Ten intervals, as the defaults (500 ms in 5 s): a peer's beat thread stalled a few hundred ms on a loaded machine is not a death. */
  private static final Duration WINDOW = Duration.ofMillis(1_000);

  private final RecordingEvents events = new RecordingEvents();
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private WorkerServer server;

  private WorkerServer start(Duration interval, Duration window) {
    server = WorkerServer.start("127.0.0.1", 0,
        WorkerServer.Settings.builder().heartbeatInterval(interval).detectionWindow(window).build(), events);
    return server;
  }

  /** A server whose detector will not interfere with tests about something else. */
  private WorkerServer startPatient() {
    return start(Duration.ofSeconds(1), Duration.ofSeconds(30));
  }

  private WirePeer joined(String workerId, int slots) throws IOException {
    WirePeer peer = WirePeer.joined(server.port(), workerId, slots);
    toClose.add(peer);
    return peer;
  }

  private WirePeer connect() throws IOException {
    WirePeer peer = WirePeer.connect(server.port());
    toClose.add(peer);
    return peer;
  }

  private WorkerHandle awaitJoined(String workerId) {
    return await().atMost(Duration.ofSeconds(5)).until(() -> events.joined(workerId), h -> h != null);
  }

  private Event awaitLost(WorkerHandle handle) {
    return await().atMost(Duration.ofSeconds(5)).until(() -> events.lost(handle), l -> !l.isEmpty()).get(0);
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void heldJobsOfAnotherStoreAreNotClaimedAndTheWelcomeNamesThisStore() throws Exception {
    server = WorkerServer.start(new java.net.InetSocketAddress("127.0.0.1", 0),
        WorkerServer.Settings.builder().heartbeatInterval(Duration.ofSeconds(1)).detectionWindow(Duration.ofSeconds(30)).build(),
        events, "store-b");
    for (String[] peerAndStore : new String[][] {{"from-a", "store-a"}, {"from-b", "store-b"}}) {
      WirePeer peer = connect();
      Envelope hello = WirePeer.hello(peerAndStore[0], 2);
      peer.send(hello.toBuilder().setHello(hello.getHello().toBuilder().setStoreId(peerAndStore[1])
          .addHeld(dev.tally.protocol.HeldJob.newBuilder().setJobId(3).setToken(1))).build());
      Envelope welcome = peer.next();
      assertThat(welcome.getWelcome().getStoreId()).isEqualTo("store-b");
    }
    assertThat(awaitJoined("from-a").heldAtJoin()).as("job 3 token 1 of store-a is another job here").isEmpty();
    assertThat(awaitJoined("from-b").heldAtJoin()).extracting(dev.tally.core.schedule.HeldLease::jobId).containsExactly(3L);
  }

  // ---- failure detection ----

  @Test
  void reapsAPeerSilentForOneWholeWindow() throws Exception {
    start(INTERVAL, WINDOW);
    WirePeer peer = joined("silent", 1);
    long lastFrameNanos = peer.lastSentNanos;
    WorkerHandle handle = awaitJoined("silent");

    Event lost = awaitLost(handle);

    long afterMillis = TimeUnit.NANOSECONDS.toMillis(lost.atNanos() - lastFrameNanos);
    assertThat(afterMillis).isBetween(WINDOW.toMillis() / 2, WINDOW.toMillis() + 2_000);
    assertThat(lost.reason()).contains("silence").startsWith("reaped after");
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
  }

  @Test
  void neverReapsAPeerThatHeartbeatsEveryInterval() throws Exception {
    start(INTERVAL, WINDOW);
    WirePeer peer = joined("steady", 1);
    WorkerHandle handle = awaitJoined("steady");
    ScheduledExecutorService beat = Executors.newSingleThreadScheduledExecutor();
    try {
      beat.scheduleAtFixedRate(() -> {
        try {
          peer.heartbeat();
        } catch (IOException e) {
          throw new RuntimeException(e);
        }
      }, 0, INTERVAL.toMillis(), TimeUnit.MILLISECONDS);

      // Four whole windows of heartbeats and not one lost event.
      await().during(WINDOW.multipliedBy(4)).atMost(WINDOW.multipliedBy(6))
          .until(() -> events.lost(handle).isEmpty() && !peer.closedByServer());
    } finally {
      beat.shutdownNow();
    }
  }

  @Test
  void anIdleSessionHearsTheCoordinatorsHeartbeats() throws Exception {
    start(INTERVAL, Duration.ofSeconds(30)); // a long window: the quiet peer is not reaped meanwhile
    WirePeer peer = joined("idle", 1);
    await().atMost(Duration.ofSeconds(10)).until(() -> peer.heartbeatsReceived() >= 3);
    assertThat(peer.pending()).as("nothing but heartbeats after the Welcome").isZero();
  }

  @Test
  void manySessionsShareTheirLoopsSweepAndEachHearsHeartbeatsOnTime() throws Exception {
    start(INTERVAL, Duration.ofSeconds(30)); // a sweep every 100 ms; a long window: quiet peers stay
    List<WirePeer> peers = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      peers.add(joined("swept-" + i, 1));
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> server.sweptConnections() == 12);
    await().atMost(Duration.ofSeconds(10)).until(() -> peers.stream().allMatch(p -> p.heartbeatsReceived() >= 8));
    // A tick waits for the next sweep: any gap stays under 1.5 intervals plus a sweep period (250 ms here),
    // with room for a loaded machine; a tick lost or a timer stopped would leave a gap of seconds.
    for (WirePeer peer : peers) {
      assertThat(peer.longestHeartbeatGapMillis()).as("the longest gap between heartbeats, ms").isLessThan(1_000);
    }
    for (WirePeer peer : peers) {
      peer.close();
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> server.sweptConnections() == 0);
  }

  @Test
  void reapsAPeerThatConnectsAndNeverSaysHelloWithoutAnyEvent() throws Exception {
    start(INTERVAL, WINDOW);
    WirePeer peer = connect();
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
    assertThat(events.events).isEmpty();
  }

  // ---- hostile or broken input ----

  static Stream<Arguments> badBytes() {
    byte[] random = new byte[64];
    new Random(42).nextBytes(random);
    random[0] = (byte) 0x9C; // a length far above the limit, whatever the seed
    byte[] framedGarbage = new byte[4 + 9];
    framedGarbage[3] = 9;
    for (int i = 4; i < framedGarbage.length; i++) {
      framedGarbage[i] = (byte) 0xFF; // an unterminated varint: not an Envelope
    }
    return Stream.of(
        Arguments.of("an oversized length prefix", new byte[] {0x7F, -1, -1, -1, 1, 2, 3}),
        Arguments.of("an HTTP request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII)),
        Arguments.of("random garbage", random),
        Arguments.of("a frame that is not an Envelope", framedGarbage),
        Arguments.of("a length-0 frame", new byte[] {0, 0, 0, 0}));
  }

  @ParameterizedTest(name = "{0} closes only its own connection")
  @MethodSource("badBytes")
  void badBytesCloseOnlyTheirOwnConnection(String what, byte[] bytes) throws Exception {
    startPatient();
    WirePeer good = joined("good", 2);
    WorkerHandle goodHandle = awaitJoined("good");
    WirePeer bad = joined("bad", 2);
    WorkerHandle badHandle = awaitJoined("bad");

    bad.sendRaw(bytes);

    Event lost = awaitLost(badHandle);
    assertThat(lost.reason()).startsWith("malformed frame:");
    await().atMost(Duration.ofSeconds(5)).until(bad::closedByServer);

    // The well-behaved session still works both ways and was never lost.
    goodHandle.assign(List.of(assignment(7, 1)));
    assertThat(good.next().getBodyCase()).isEqualTo(Envelope.BodyCase.RUN_CONFIG);
    Assign assign = good.next().getAssign();
    assertThat(assign.getJobId()).isEqualTo(7);
    good.send(passResult(7, assign.getToken()));
    await().atMost(Duration.ofSeconds(5)).until(() -> events.reports(goodHandle).size() == 1);
    assertThat(events.lost(goodHandle)).isEmpty();
    assertThat(good.closedByServer()).isFalse();
  }

  @Test
  void anHttpRequestBeforeAnyHelloIsClosedWithoutAnyEvent() throws Exception {
    startPatient();
    WirePeer peer = connect();
    peer.sendRaw("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
    assertThat(events.events).isEmpty();
  }

  @Test
  void firstFrameThatIsNotHelloIsAnsweredWithGoodbyeAndClosed() throws Exception {
    startPatient();
    WirePeer peer = connect();
    peer.heartbeat();
    assertThat(peer.next().getGoodbye().getReason()).isEqualTo("first frame must be Hello, got HEARTBEAT");
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
    assertThat(events.events).isEmpty();
  }

  @Test
  void helloWithZeroSlotsIsRefused() throws Exception {
    startPatient();
    WirePeer peer = connect();
    peer.send(WirePeer.hello("w", 0));
    assertThat(peer.next().getGoodbye().getReason()).contains("slots must be between 1 and", "got 0");
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
    assertThat(events.events).isEmpty();
  }

  @Test
  void helloWithAnEmptyWorkerIdIsRefused() throws Exception {
    startPatient();
    WirePeer peer = connect();
    peer.send(WirePeer.hello("", 1));
    assertThat(peer.next().getGoodbye().getReason()).contains("worker_id is empty");
    assertThat(events.events).isEmpty();
  }

  @Test
  void anAssignFromAWorkerClosesItsConnection() throws Exception {
    startPatient();
    WirePeer peer = joined("confused", 1);
    WorkerHandle handle = awaitJoined("confused");
    peer.send(Envelope.newBuilder().setAssign(Assign.newBuilder().setJobId(1)).build());
    assertThat(awaitLost(handle).reason()).isEqualTo("unexpected ASSIGN from a worker");
    assertThat(peer.next().getGoodbye().getReason()).isEqualTo("unexpected ASSIGN from a worker");
  }

  // ---- session identity ----

  @Test
  void aSecondHelloOnALiveConnectionClosesIt() throws Exception {
    startPatient();
    WirePeer peer = joined("twice", 1);
    WorkerHandle handle = awaitJoined("twice");
    peer.send(WirePeer.hello("twice", 1));
    assertThat(awaitLost(handle).reason()).contains("second Hello");
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
  }

  @Test
  void aHelloWithTheSameWorkerIdSupersedesTheOldSession() throws Exception {
    startPatient();
    WirePeer first = joined("w-1", 1);
    WorkerHandle firstHandle = awaitJoined("w-1");

    WirePeer second = joined("w-1", 1); // waits for Welcome

    Event lost = awaitLost(firstHandle);
    assertThat(lost.reason()).isEqualTo("superseded by a new session");
    await().atMost(Duration.ofSeconds(5)).until(first::closedByServer);
    WorkerHandle secondHandle = awaitJoined("w-1");
    assertThat(secondHandle).isNotSameAs(firstHandle);
    assertThat(events.events.indexOf(lost))
        .as("the old session is lost before the new one joins")
        .isLessThan(events.events.stream().filter(e -> e.worker() == secondHandle).findFirst()
            .map(events.events::indexOf).orElseThrow());
    assertThat(events.lost(secondHandle)).isEmpty();

    secondHandle.assign(List.of(assignment(1, 1)));
    assertThat(second.next().getBodyCase()).isEqualTo(Envelope.BodyCase.RUN_CONFIG);
    assertThat(second.next().getAssign().getJobId()).isEqualTo(1);
  }

  @Test
  void framesSentRightAfterASupersedingHelloAreKeptAndDeliveredAfterJoining() throws Exception {
    startPatient();
    joined("w-2", 1);
    WorkerHandle firstHandle = awaitJoined("w-2");
    WirePeer second = connect();
    second.send(WirePeer.hello("w-2", 1));
    second.send(passResult(3, 30)); // pipelined before the Welcome: an outbox replay after reconnecting

    await().atMost(Duration.ofSeconds(5)).until(() -> events.events.stream()
        .anyMatch(e -> e.kind() == Kind.ENDED && e.worker() != firstHandle));
    List<Kind> order = events.events.stream().map(Event::kind).toList();
    assertThat(order).containsExactly(Kind.JOINED, Kind.LOST, Kind.JOINED, Kind.ENDED);
    assertThat(second.next().getBodyCase()).isEqualTo(Envelope.BodyCase.WELCOME);
  }

  // ---- reports ----

  @Test
  void resultsReachAttemptEndedWithTheRightReport() throws Exception {
    startPatient();
    WirePeer peer = joined("reporter", 2);
    WorkerHandle handle = awaitJoined("reporter");

    peer.send(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(1).setToken(-1L) // 2^64-1 on the wire
        .setOutcome(Outcome.newBuilder().setVerdict(dev.tally.protocol.Verdict.PASS).setHasScore(true)
            .setScore(0.75).setOutputTail("ok\n").setDurationMillis(12))).build());
    peer.send(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(2).setToken(5)
        .setOutcome(Outcome.newBuilder().setVerdict(dev.tally.protocol.Verdict.FAIL).setDurationMillis(3))).build());
    peer.send(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(3).setToken(6)
        .setFailure(dev.tally.protocol.InfraFailure.newBuilder()
            .setKind(dev.tally.protocol.InfraFailure.Kind.TIMEOUT).setDetail("ran past 30000ms")
            .setDurationMillis(30_000))).build());

    await().atMost(Duration.ofSeconds(5)).until(() -> events.reports(handle).size() == 3);
    assertThat(events.reports(handle)).containsExactly(
        AttemptReport.of(1, -1L, new dev.tally.core.Outcome(Verdict.PASS, 0.75, "ok\n", 12)).withTiming(0, 12),
        AttemptReport.of(2, 5, new dev.tally.core.Outcome(Verdict.FAIL, null, "", 3)).withTiming(0, 3),
        AttemptReport.failed(3, 6, new InfraFailure(InfraFailure.Kind.TIMEOUT, "ran past 30000ms")).withTiming(0, 30_000));
    assertThat(events.lost(handle)).isEmpty();
  }

  @Test
  void aResultWithNeitherOutcomeNorFailureIsMalformed() throws Exception {
    startPatient();
    WirePeer peer = joined("sloppy", 1);
    WorkerHandle handle = awaitJoined("sloppy");
    peer.send(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(9).setToken(1)).build());
    assertThat(awaitLost(handle).reason())
        .isEqualTo("malformed frame: Result for job 9 (token 1) has neither outcome nor failure");
    assertThat(events.reports(handle)).isEmpty();
  }

  // ---- ends ----

  @Test
  void aPeerClosingItsSocketIsLostAsClosedByPeer() throws Exception {
    startPatient();
    WirePeer peer = joined("leaver", 1);
    WorkerHandle handle = awaitJoined("leaver");
    peer.close();
    assertThat(awaitLost(handle).reason()).isEqualTo("closed by peer");
  }

  @Test
  void aWorkerThatSaysDrainKeepsItsSessionAndResultsButGetsNoNewWork() throws Exception {
    startPatient();
    WirePeer peer = joined("leaving", 1);
    WorkerHandle handle = awaitJoined("leaving");
    assertThat(handle.acceptingWork()).isTrue();

    peer.send(Envelope.newBuilder().setDrain(Drain.newBuilder().setReason("SIGTERM")).build());
    peer.send(passResult(4, 40));

    await().atMost(Duration.ofSeconds(5)).until(() -> events.reports(handle).size() == 1);
    assertThat(handle.acceptingWork()).isFalse();
    assertThat(events.lost(handle)).isEmpty();
    assertThat(peer.closedByServer()).isFalse();
  }

  @Test
  void aGoodbyeFromTheWorkerEndsTheSessionWithItsReason() throws Exception {
    startPatient();
    WirePeer peer = joined("polite", 1);
    WorkerHandle handle = awaitJoined("polite");
    peer.send(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("shutting down")).build());
    assertThat(awaitLost(handle).reason()).isEqualTo("worker said goodbye: shutting down");
    await().atMost(Duration.ofSeconds(5)).until(peer::closedByServer);
  }

  @Test
  void workerLostIsReportedExactlyOnce() throws Exception {
    startPatient();
    WirePeer peer = joined("once", 1);
    WorkerHandle handle = awaitJoined("once");
    handle.close("first");
    handle.close("second");
    awaitLost(handle);
    try {
      peer.sendRaw(new byte[] {0x7F, 0, 0, 0}); // a malformed frame after the end changes nothing
    } catch (IOException closedAlready) {
      // fine: the socket is gone
    }
    server.close();
    assertThat(events.lost(handle)).hasSize(1);
    assertThat(events.lost(handle).get(0).reason()).isEqualTo("closed by coordinator: first");
  }

  static Assignment assignment(long jobId, long runId) {
    return new Assignment(jobId, runId, 100 + jobId, 1, "case-" + jobId, "{\"id\":\"case-" + jobId + "\"}",
        new EvaluatorSpec("noop", Map.of(), Duration.ofSeconds(30)));
  }

  static Envelope passResult(long jobId, long token) {
    return Envelope.newBuilder().setResult(Result.newBuilder().setJobId(jobId).setToken(token)
        .setOutcome(Outcome.newBuilder().setVerdict(dev.tally.protocol.Verdict.PASS))).build();
  }
}
