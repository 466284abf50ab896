package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import dev.tally.core.Verdict;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.InfraFailure;
import dev.tally.protocol.Result;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import dev.tally.worker.eval.EvaluatorFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class WorkerSessionTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private FakeCoordinator coordinator;
  private final List<WorkerSession> sessions = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    coordinator = new FakeCoordinator();
  }

  @AfterEach
  void tearDown() throws Exception {
    sessions.forEach(WorkerSession::close);
    coordinator.close();
  }

  /** The built-in evaluators plus {@code spin}: a pure-CPU busy loop of option {@code millis}. */
  private static Evaluator evaluators(String kind, Map<String, String> options) {
    if (!kind.equals("spin")) {
      return EvaluatorFactory.create(kind, options);
    }
    long millis = Long.parseLong(options.get("millis"));
    return ctx -> {
      long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      long x = 0;
      while (System.nanoTime() < end && !ctx.cancelled()) {
        x += x * 31 + 7; // keep the core busy; no sleeping, no blocking
      }
      return Evaluation.finished(Verdict.PASS, (double) (x & 1), "", ctx.elapsedMillis());
    };
  }

  private WorkerSession start(int slots) {
    return start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(slots));
  }

  private WorkerSession start(WorkerSettings.Builder builder) {
    WorkerSession s =
        new WorkerSession(
            builder
                .initialBackoff(Duration.ofMillis(20))
                .maxBackoff(Duration.ofMillis(200))
                .evaluatorFactory(WorkerSessionTest::evaluators)
                .build());
    sessions.add(s);
    s.start();
    return s;
  }

  private static boolean isResultFor(Envelope e, long jobId) {
    return e.hasResult() && e.getResult().getJobId() == jobId;
  }

  private static long resultsFor(FakeCoordinator.Conn conn, long jobId) {
    return conn.envelopes().stream().filter(e -> isResultFor(e, jobId)).count();
  }

  @Test
  void sendsHelloAsTheFirstFrameWithItsSlotsAndWorkerId() {
    UUID id = UUID.randomUUID();
    start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(3).workerId(id).name("w-1"));

    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    await().atMost(WAIT).until(() -> !conn.frames().isEmpty());

    Envelope first = conn.frames().get(0).envelope();
    assertThat(first.hasHello()).isTrue();
    assertThat(first.getHello().getSlots()).isEqualTo(3);
    assertThat(first.getHello().getWorkerId()).isEqualTo(id.toString());
    assertThat(first.getHello().getName()).isEqualTo("w-1");
  }

  @Test
  void heartbeatsArriveAtTheWelcomeIntervalWithIncreasingSeq() {
    WorkerSession session = start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    long welcomedAt = System.nanoTime();
    conn.welcome(100);
    await().atMost(WAIT).until(session::connected);

    await().atMost(WAIT).until(() -> heartbeats(conn).size() >= 6);
    List<FakeCoordinator.Frame> hbs = heartbeats(conn);
    for (int i = 1; i < hbs.size(); i++) {
      assertThat(hbs.get(i).envelope().getHeartbeat().getSeq())
          .isGreaterThan(hbs.get(i - 1).envelope().getHeartbeat().getSeq());
    }
    // 6 heartbeats at 100 ms: the 6th comes ~600 ms after the Welcome; neither flooding nor idle.
    long sixthMillis = TimeUnit.NANOSECONDS.toMillis(hbs.get(5).arrivalNanos() - welcomedAt);
    assertThat(sixthMillis).isBetween(450L, 1_500L);
  }

  @Test
  void sessionsOnASharedEventLoopGroupHeartbeatAndOneClosedLeavesTheGroupToTheOthers() throws Exception {
    io.netty.channel.EventLoopGroup shared = new io.netty.channel.MultiThreadIoEventLoopGroup(1,
        io.netty.channel.nio.NioIoHandler.newFactory());
    try {
      List<WorkerSession> onShared = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        WorkerSession s = new WorkerSession(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(1)
            .initialBackoff(Duration.ofMillis(20)).maxBackoff(Duration.ofMillis(200))
            .evaluatorFactory(WorkerSessionTest::evaluators).build(), shared);
        onShared.add(s);
        sessions.add(s);
        s.start();
      }
      List<FakeCoordinator.Conn> conns = new ArrayList<>();
      for (int i = 1; i <= 3; i++) {
        FakeCoordinator.Conn conn = coordinator.awaitConnection(i);
        conn.awaitFrame(Envelope::hasHello, WAIT);
        conn.welcome(100);
        conns.add(conn);
      }
      await().atMost(WAIT).until(() -> onShared.stream().allMatch(WorkerSession::connected));

      onShared.get(0).close("first one done");
      assertThat(shared.isShuttingDown()).as("a session leaves a shared group running").isFalse();
      int before = heartbeats(conns.get(2)).size();
      await().atMost(WAIT).until(() -> heartbeats(conns.get(1)).size() >= before + 3 && heartbeats(conns.get(2)).size() >= before + 3);
    } finally {
      sessions.forEach(WorkerSession::close);
      shared.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }
  }

  private static List<FakeCoordinator.Frame> heartbeats(FakeCoordinator.Conn conn) {
    return conn.frames().stream().filter(f -> f.envelope().hasHeartbeat()).toList();
  }

  @Test
  void keepsHeartbeatingWhileEverySlotRunsACpuBoundCase() {
    int slots = Math.max(2, Runtime.getRuntime().availableProcessors() * 2); // oversubscribe the CPUs
    WorkerSession session = start(slots);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    long intervalMillis = 100;
    conn.welcome(intervalMillis);
    conn.runConfig(1, "spin", Map.of("millis", "2000"), 60_000);
    for (int job = 1; job <= slots; job++) {
      conn.assign(job, 1, 7, "{}");
    }

    // Every slot is busy once a heartbeat lists every job as in flight.
    await().atMost(WAIT)
        .until(() -> heartbeats(conn).stream().anyMatch(f -> f.envelope().getHeartbeat().getInFlightCount() == slots));
    long busyFrom = System.nanoTime();
    await().atMost(WAIT).until(() -> session.completedCount() == slots);
    long busyUntil = System.nanoTime();

    List<Long> arrivals =
        heartbeats(conn).stream()
            .map(FakeCoordinator.Frame::arrivalNanos)
            .filter(t -> t >= busyFrom - TimeUnit.MILLISECONDS.toNanos(intervalMillis) && t <= busyUntil)
            .toList();
    assertThat(TimeUnit.NANOSECONDS.toMillis(busyUntil - busyFrom)).isGreaterThan(1_000);
    assertThat(arrivals).hasSizeGreaterThan(5);
    long maxGapMillis = 0;
    for (int i = 1; i < arrivals.size(); i++) {
      maxGapMillis = Math.max(maxGapMillis, TimeUnit.NANOSECONDS.toMillis(arrivals.get(i) - arrivals.get(i - 1)));
    }
    // A gap the coordinator would mind is a detection window, ten intervals by default; one tenth of a
    // second per interval leaves room for a loaded machine to be late without hiding a starved I/O thread
    // (a heartbeat sent from a busy slot thread would wait the whole 2 s case).
    assertThat(maxGapMillis).isLessThan(10 * intervalMillis);
    await().atMost(WAIT).until(() -> conn.envelopes().stream().filter(Envelope::hasResult).count() == slots);
  }

  @Test
  void runsAnAssignedCaseAndReportsItsResultWithTheToken() {
    WorkerSession session = start(2);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(1_000);
    conn.runConfig(5, "noop", Map.of(), 10_000);
    conn.assign(42, 5, 9, "{\"id\":\"x\"}");

    Result r = conn.awaitFrame(e -> isResultFor(e, 42), WAIT).getResult();
    assertThat(r.getToken()).isEqualTo(9);
    assertThat(r.getOutcome().getVerdict()).isEqualTo(dev.tally.protocol.Verdict.PASS);
    assertThat(r.getOutcome().getHasScore()).isFalse();
    assertThat(session.completedCount()).isEqualTo(1);
    assertThat(session.outboxSize()).isEqualTo(1);

    conn.ack(42, 9, AckEntry.Status.RECORDED);
    await().atMost(WAIT).until(() -> session.outboxSize() == 0);
  }

  @Test
  void anAssignForAnUnknownRunIsReportedAsARetryableEvaluatorCrash() {
    start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(1_000);
    conn.assign(3, 77, 1, "{}");

    Result r = conn.awaitFrame(e -> isResultFor(e, 3), WAIT).getResult();
    assertThat(r.getFailure().getKind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(r.getFailure().getDetail()).isEqualTo("no RunConfig for run 77");
  }

  @Test
  void resendsUnackedResultsAfterReconnectingWithTheSameWorkerIdButNotAckedOnes() {
    WorkerSession session = start(2);
    FakeCoordinator.Conn first = coordinator.awaitConnection(1);
    String workerId = first.awaitFrame(Envelope::hasHello, WAIT).getHello().getWorkerId();
    first.welcome(1_000);
    first.runConfig(1, "noop", Map.of(), 10_000);
    first.assign(1, 1, 11, "{}");
    first.assign(2, 1, 12, "{}");
    first.awaitFrame(e -> isResultFor(e, 1), WAIT);
    first.awaitFrame(e -> isResultFor(e, 2), WAIT);
    first.ack(1, 11, AckEntry.Status.RECORDED);
    await().atMost(WAIT).until(() -> session.outboxSize() == 1);

    first.drop();
    await().atMost(WAIT).until(() -> !session.connected());
    FakeCoordinator.Conn second = coordinator.awaitConnection(2);
    Envelope hello = second.awaitFrame(Envelope::hasHello, WAIT);
    assertThat(hello.getHello().getWorkerId()).isEqualTo(workerId);
    assertThat(hello.getHello().getHeldList()).extracting(h -> h.getJobId()).containsExactly(2L);
    // Nothing before the Welcome, however long it takes to come.
    await().during(Duration.ofMillis(300)).atMost(WAIT).until(() -> resultsFor(second, 2) == 0);

    second.welcome(1_000);
    Result again = second.awaitFrame(e -> isResultFor(e, 2), WAIT).getResult();
    assertThat(again.getToken()).isEqualTo(12);
    second.ack(2, 12, AckEntry.Status.DUPLICATE);
    await().atMost(WAIT).until(() -> session.outboxSize() == 0);
    // The outbox is re-sent in one burst right after the Welcome, so by now job 1 would be there.
    assertThat(resultsFor(second, 1)).isZero();
  }

  @Test
  void aCoordinatorOnAnotherStoreGetsNoneOfTheOldStoresResultsAndItsJobsStop() {
    WorkerSession session = start(2);
    FakeCoordinator.Conn first = coordinator.awaitConnection(1);
    first.awaitFrame(Envelope::hasHello, WAIT);
    first.welcome(50, "store-a");
    first.runConfig(1, "sleep", Map.of(), 60_000);
    first.assign(1, 1, 1, "{\"millis\": 0}");
    first.assign(2, 1, 1, "{\"millis\": 30000}");
    first.awaitFrame(e -> isResultFor(e, 1), WAIT); // job 1 done, never acked; job 2 still running
    await().atMost(WAIT).until(() -> session.outboxSize() == 1);

    first.drop();
    FakeCoordinator.Conn second = coordinator.awaitConnection(2);
    Envelope hello = second.awaitFrame(Envelope::hasHello, WAIT);
    assertThat(hello.getHello().getStoreId()).isEqualTo("store-a");
    assertThat(hello.getHello().getHeldList()).extracting(h -> h.getJobId()).containsExactlyInAnyOrder(1L, 2L);

    second.welcome(50, "store-b"); // the same address, another coordinator's store: job 1 and 2 mean nothing here
    await().atMost(WAIT).until(() -> session.outboxSize() == 0);
    Envelope beat = second.awaitFrame(Envelope::hasHeartbeat, WAIT);
    assertThat(beat.getHeartbeat().getInFlightList()).as("job 2 was stopped").isEmpty();
    second.runConfig(1, "sleep", Map.of(), 60_000);
    second.assign(7, 1, 1, "{\"millis\": 0}");
    second.awaitFrame(e -> isResultFor(e, 7), WAIT);
    await().during(Duration.ofMillis(300)).atMost(WAIT).until(() -> resultsFor(second, 1) == 0 && resultsFor(second, 2) == 0);

    second.drop();
    FakeCoordinator.Conn third = coordinator.awaitConnection(3);
    assertThat(third.awaitFrame(Envelope::hasHello, WAIT).getHello().getStoreId()).isEqualTo("store-b");
  }

  @Test
  void aCaseThatFinishesWhileDisconnectedIsDeliveredAfterTheReconnect() {
    WorkerSession session = start(1);
    FakeCoordinator.Conn first = coordinator.awaitConnection(1);
    first.awaitFrame(Envelope::hasHello, WAIT);
    first.welcome(50);
    first.runConfig(1, "sleep", Map.of(), 10_000);
    first.assign(8, 1, 3, "{\"millis\": 700}");
    first.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightList().contains(8L), WAIT);

    first.drop(); // while the case runs
    await().atMost(WAIT).until(() -> session.completedCount() == 1);
    FakeCoordinator.Conn second = coordinator.awaitConnection(2);
    second.awaitFrame(Envelope::hasHello, WAIT);
    second.welcome(1_000);

    Result r = second.awaitFrame(e -> isResultFor(e, 8), WAIT).getResult();
    assertThat(r.getToken()).isEqualTo(3);
    assertThat(r.getOutcome().getVerdict()).isEqualTo(dev.tally.protocol.Verdict.PASS);
    assertThat(r.getOutcome().getDurationMillis()).isGreaterThanOrEqualTo(700);
    assertThat(resultsFor(first, 8)).isZero();
  }

  @Test
  void abandonStopsTheRunningCaseWhichIsNotReportedAndFreesItsSlot() {
    WorkerSession session = start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(50);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 4, "{\"millis\": 30000}");
    conn.assign(2, 1, 5, "{\"millis\": 30000}"); // queued behind job 1 on the one slot
    conn.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightCount() == 2, WAIT);

    conn.send(abandon(1, 3)); // an older token: not this lease, ignored
    conn.send(abandon(2, 5)); // queued: dropped
    conn.send(abandon(1, 4)); // running: cancelled
    conn.assign(3, 1, 6, "{\"millis\": 0}");

    conn.awaitFrame(e -> isResultFor(e, 3), Duration.ofSeconds(5)); // the slot is free again
    assertThat(resultsFor(conn, 1)).isZero();
    assertThat(resultsFor(conn, 2)).isZero();
    assertThat(session.completedCount()).isEqualTo(1);
  }

  private static Envelope abandon(long jobId, long token) {
    return Envelope.newBuilder()
        .setAbandon(dev.tally.protocol.Abandon.newBuilder().setJobId(jobId).setToken(token).setReason("test"))
        .build();
  }

  @Test
  void anAssignOverflowingTheQueueClosesTheConnection() {
    start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(1).maxQueuedAssignments(2));
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(1_000);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 1, "{\"millis\": 30000}");
    conn.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightCount() == 1, WAIT); // job 1 runs
    conn.assign(2, 1, 1, "{}");
    conn.assign(3, 1, 1, "{}");
    assertThat(conn.ended()).isFalse();

    conn.assign(4, 1, 1, "{}");

    await().atMost(WAIT).until(conn::ended);
    coordinator.awaitConnection(2); // and it comes back
  }

  /** A refusal because of a drain is a hand-back: neither the case's failure nor the worker's. */
  @Test
  void afterDrainNewAssignmentsAreRefusedButHeldOnesFinish() {
    start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(1_000);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 1, "{\"millis\": 300}");
    conn.send(
        Envelope.newBuilder().setDrain(dev.tally.protocol.Drain.newBuilder().setReason("maintenance")).build());
    conn.assign(2, 1, 1, "{}");

    Result refused = conn.awaitFrame(e -> isResultFor(e, 2), WAIT).getResult();
    assertThat(refused.getFailure().getKind()).isEqualTo(InfraFailure.Kind.HANDED_BACK);
    assertThat(refused.getFailure().getDetail()).contains("draining");
    Result finished = conn.awaitFrame(e -> isResultFor(e, 1), WAIT).getResult();
    assertThat(finished.getOutcome().getVerdict()).isEqualTo(dev.tally.protocol.Verdict.PASS);
  }

  @Test
  void closeSaysGoodbyeAndStopsRunningCases() throws Exception {
    WorkerSession session = start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(50);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 1, "{\"millis\": 30000}");
    conn.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightList().contains(1L), WAIT);

    long before = System.nanoTime();
    session.close();

    // Well under the 30 s case, and under the 5 s close() would wait for a slot that ignored the cancel.
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).isLessThan(3_000);
    assertThat(session.awaitTermination(Duration.ZERO)).isTrue();
    conn.awaitFrame(Envelope::hasGoodbye, WAIT);
    await().atMost(WAIT).until(conn::ended);
    assertThat(resultsFor(conn, 1)).isZero();
    assertThat(session.connected()).isFalse();
  }

  @Test
  void deliversTwentyThousandNoopResultsInAFewSeconds() {
    int jobs = 20_000;
    WorkerSession session =
        start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(4).maxQueuedAssignments(jobs));
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.autoAck(); // else the outbox fills at OUTBOX_LIMIT and the slots wait, as designed
    conn.welcome(1_000);
    conn.runConfig(1, "noop", Map.of(), 10_000);
    long start = System.nanoTime();
    for (int job = 1; job <= jobs; job++) {
      conn.assign(job, 1, 1, "{}");
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> conn.envelopes().stream().filter(Envelope::hasResult).count() == jobs);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    System.out.printf("%d noop results in %d ms (%.0f/s)%n", jobs, millis, jobs * 1000.0 / Math.max(1, millis));
    assertThat(session.completedCount()).isEqualTo(jobs);
    await().atMost(WAIT).until(() -> session.outboxSize() == 0);
  }

  @Test
  void whileTheOutboxIsFullSlotsStartNoNewCaseUntilAnAckMakesRoom() {
    int limit = Outbox.OUTBOX_LIMIT;
    WorkerSession session =
        start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(1).maxQueuedAssignments(limit + 10));
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(1_000);
    conn.runConfig(1, "noop", Map.of(), 10_000);
    for (int job = 1; job <= limit + 5; job++) {
      conn.assign(job, 1, 1, "{}");
    }

    await().atMost(WAIT).until(() -> session.completedCount() == limit);
    await().during(Duration.ofMillis(300)).atMost(WAIT).until(() -> session.completedCount() == limit);
    assertThat(session.outboxSize()).isEqualTo(limit);

    conn.ack(1, 1, AckEntry.Status.RECORDED);

    await().atMost(WAIT).until(() -> session.completedCount() == limit + 1);
  }

  /**
   * Of several coordinator addresses, the log and the join name the one the worker is connected to: a
   * worker that moved to the new leader said it had reconnected to the first address, which was dead.
   */
  @Test
  void theLogNamesTheCoordinatorTheWorkerIsConnectedToOfSeveral() throws Exception {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger logger = (Logger) LoggerFactory.getLogger(SessionCore.class);
    logger.addAppender(appender);
    try (FakeCoordinator second = new FakeCoordinator()) {
      WorkerSession session = start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(1)
          .coordinators(List.of(new WorkerSettings.Address("127.0.0.1", coordinator.port()),
              new WorkerSettings.Address("127.0.0.1", second.port()))));
      coordinator.awaitConnection(1).welcome(1_000);
      assertThat(session.joined().toCompletableFuture().get(10, TimeUnit.SECONDS)).isEqualTo("127.0.0.1:" + coordinator.port());
      coordinator.close(); // the first leader is gone: the next attempt goes to the second address
      second.awaitConnection(1).welcome(1_000);
      await().atMost(WAIT).until(() -> count(appender, Level.WARN, "reconnected to the coordinator at 127.0.0.1:" + second.port()) == 1);
      assertThat(messages(appender, Level.WARN, "lost the coordinator at")).singleElement().asString()
          .contains("127.0.0.1:" + coordinator.port());
      assertThat(session.joined().toCompletableFuture().get()).as("the first join stands").isEqualTo("127.0.0.1:" + coordinator.port());
    } finally {
      logger.detachAppender(appender);
    }
  }

  /**
   * The CLI shows WARN and up: a worker that cannot reach its coordinator must say so there, with its next
   * retry, at a falling rate (the 1st, 2nd, 4th, 8th... failure), and say when it is back.
   */
  @Test
  void connectionTroubleIsLoggedAtAFallingRateWithTheNextRetry() throws Exception {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    List<Logger> loggers = List.of((Logger) LoggerFactory.getLogger(Reconnector.class), (Logger) LoggerFactory.getLogger(SessionCore.class));
    loggers.forEach(l -> l.addAppender(appender));
    Level before = loggers.get(0).getLevel();
    loggers.get(0).setLevel(Level.DEBUG); // to count the attempts that are not logged at WARN
    try {
      int deadPort;
      try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
        deadPort = probe.getLocalPort(); // nothing listens there once closed
      }
      String prefix = "cannot reach coordinator 127.0.0.1:" + deadPort;
      start(WorkerSettings.builder("127.0.0.1", deadPort).slots(1));
      await().atMost(WAIT).until(() -> count(appender, Level.DEBUG, prefix) + count(appender, Level.WARN, prefix) >= 9);
      List<String> warned = messages(appender, Level.WARN, prefix);
      assertThat(warned.subList(0, 4)).as("the 1st, 2nd, 4th and 8th failures, and no other")
          .allMatch(m -> m.contains("next attempt in"))
          .satisfiesExactly(
              m -> assertThat(m).contains("(attempt 1,"), m -> assertThat(m).contains("(attempt 2,"),
              m -> assertThat(m).contains("(attempt 4,"), m -> assertThat(m).contains("(attempt 8,"));
      assertThat(messages(appender, Level.DEBUG, prefix)).anyMatch(m -> m.contains("(attempt 3,"));

      WorkerSession session = start(1);
      FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
      conn.welcome(1_000);
      await().atMost(WAIT).until(session::connected);
      conn.drop();
      await().atMost(WAIT).until(() -> count(appender, Level.WARN, "lost the coordinator at 127.0.0.1:" + coordinator.port()) == 1);
      coordinator.awaitConnection(2).welcome(1_000);
      await().atMost(WAIT).until(() -> count(appender, Level.WARN, "reconnected to the coordinator at 127.0.0.1:" + coordinator.port()) == 1);
    } finally {
      loggers.get(0).setLevel(before);
      loggers.forEach(l -> l.detachAppender(appender));
    }
  }

  @Test
  void aWorkerThatIsNeverWelcomedGivesUpAfterItsTime() throws Exception {
    int deadPort;
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
      deadPort = probe.getLocalPort();
    }
    long before = System.nanoTime();
    WorkerSession session = start(WorkerSettings.builder("127.0.0.1", deadPort).slots(1).giveUpAfter(Duration.ofSeconds(1)));

    assertThat(session.awaitTermination(WAIT)).isTrue();
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).isGreaterThanOrEqualTo(1_000);
    assertThat(session.termination().kind()).isEqualTo(Termination.Kind.GAVE_UP);
    assertThat(session.termination().kind().exitCode()).isNotZero();
    assertThat(session.termination().detail()).startsWith("gave up: no Welcome from the coordinator at 127.0.0.1:" + deadPort);
  }

  /** Regression: a worker given a web server's address reported a frame length of 1,213,486,160 bytes. */
  @Test
  void aWorkerPointedAtAnHttpServerSaysItIsNotACoordinator() throws Exception {
    try (java.net.ServerSocket web = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      Thread server = new Thread(() -> {
        while (!web.isClosed()) {
          try (java.net.Socket s = web.accept()) {
            s.getOutputStream().write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
          } catch (java.io.IOException closed) {
            return;
          }
        }
      }, "fake-http-server");
      server.setDaemon(true);
      server.start();
      WorkerSession session = start(WorkerSettings.builder("127.0.0.1", web.getLocalPort()).slots(1).giveUpAfter(Duration.ofSeconds(1)));

      assertThat(session.awaitTermination(WAIT)).isTrue();
      assertThat(session.termination().detail())
          .endsWith("the last: not a Tally coordinator (it answered like an HTTP server)")
          .doesNotContain("frame length");
    }
  }

  /**
   * The half-open connection, seen from the worker: the coordinator's host died or its network path
   * dropped, and the socket stays open. The worker convicts the silence (about 10 s) and reconnects,
   * keeping its outbox and its running case.
   */
  @Test
  void aWorkerLeavesACoordinatorThatFellSilentAndReconnectsWithItsOutboxAndRunningCase() {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger logger = (Logger) LoggerFactory.getLogger(SessionCore.class);
    logger.addAppender(appender);
    try {
      WorkerSession session = start(2);
      FakeCoordinator.Conn first = coordinator.awaitConnection(1);
      first.awaitFrame(Envelope::hasHello, WAIT);
      first.welcome(100);
      first.runConfig(1, "sleep", Map.of(), 60_000);
      first.assign(1, 1, 5, "{\"millis\": 0}");
      first.assign(2, 1, 6, "{\"millis\": 60000}");
      first.awaitFrame(e -> isResultFor(e, 1), WAIT); // never acked
      long silentFrom = System.nanoTime();
      first.silence();

      await().atMost(Duration.ofSeconds(30)).until(() -> coordinator.connectionCount() >= 2);
      FakeCoordinator.Conn second = coordinator.awaitConnection(2);
      long silentForMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - silentFrom);
      assertThat(silentForMillis).as("patient with a paused coordinator").isGreaterThan(5_000);
      assertThat(first.ended()).as("the worker closed the silent connection").isTrue();
      Envelope hello = second.awaitFrame(Envelope::hasHello, WAIT);
      assertThat(hello.getHello().getHeldList()).extracting(h -> h.getJobId()).containsExactlyInAnyOrder(1L, 2L);
      assertThat(messages(appender, Level.WARN, "lost the coordinator at")).singleElement()
          .satisfies(m -> assertThat(m).containsPattern("silent for \\d+ ms with the connection open"));
      second.welcome(100);
      assertThat(second.awaitFrame(e -> isResultFor(e, 1), WAIT).getResult().getToken()).isEqualTo(5);
      assertThat(second.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightList().contains(2L), WAIT))
          .as("the running case went on").isNotNull();
      assertThat(session.connected()).isTrue();
    } finally {
      logger.detachAppender(appender);
    }
  }

  /** Queue time and run time are told apart: a job waiting behind another says how long it waited. */
  @Test
  void aResultSaysHowLongItsJobWaitedForASlot() {
    start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(1_000);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 1, "{\"millis\": 600}");
    conn.assign(2, 1, 1, "{\"millis\": 0}"); // waits for job 1's slot

    Result first = conn.awaitFrame(e -> isResultFor(e, 1), WAIT).getResult();
    Result second = conn.awaitFrame(e -> isResultFor(e, 2), WAIT).getResult();
    assertThat(first.getQueuedMillis()).isLessThan(500);
    assertThat(first.getOutcome().getDurationMillis()).isGreaterThanOrEqualTo(600);
    assertThat(second.getQueuedMillis()).isGreaterThanOrEqualTo(550);
    assertThat(second.getOutcome().getDurationMillis()).isLessThan(500);
  }

  @Test
  void aGracefulDrainHandsBackQueuedJobsAtOnceFinishesTheRunningOneAndSaysGoodbyeOnceItIsAcked() throws Exception {
    WorkerSession session = start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(100);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 1, "{\"millis\": 1500}");
    conn.assign(2, 1, 1, "{\"millis\": 0}"); // queued behind job 1
    conn.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightCount() == 2, WAIT);

    session.drain();

    conn.awaitFrame(Envelope::hasDrain, WAIT);
    Result handedBack = conn.awaitFrame(e -> isResultFor(e, 2), WAIT).getResult();
    assertThat(handedBack.getFailure().getKind()).isEqualTo(InfraFailure.Kind.HANDED_BACK);
    assertThat(resultsFor(conn, 1)).as("handed back before job 1 ends").isZero();
    conn.assign(3, 1, 1, "{\"millis\": 0}");
    assertThat(conn.awaitFrame(e -> isResultFor(e, 3), WAIT).getResult().getFailure().getKind())
        .isEqualTo(InfraFailure.Kind.HANDED_BACK);
    conn.ack(2, 1, AckEntry.Status.RELEASED);
    conn.ack(3, 1, AckEntry.Status.RELEASED);
    Result finished = conn.awaitFrame(e -> isResultFor(e, 1), WAIT).getResult();
    assertThat(finished.getOutcome().getVerdict()).isEqualTo(dev.tally.protocol.Verdict.PASS);
    await().during(Duration.ofMillis(300)).atMost(WAIT).until(() -> !conn.ended()); // waits for the ack
    assertThat(session.termination()).isNull();

    conn.ack(1, 1, AckEntry.Status.RECORDED);

    assertThat(session.awaitTermination(WAIT)).isTrue();
    assertThat(session.termination().kind()).isEqualTo(Termination.Kind.DRAINED);
    assertThat(session.termination().kind().exitCode()).isZero();
    conn.awaitFrame(Envelope::hasGoodbye, WAIT);
    await().atMost(WAIT).until(conn::ended);
  }

  @Test
  void aCaseStillRunningWhenTheDrainTimeoutPassesIsStoppedAndNotReported() throws Exception {
    WorkerSession session = start(WorkerSettings.builder("127.0.0.1", coordinator.port()).slots(1).drainTimeout(Duration.ofMillis(500)));
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(100);
    conn.runConfig(1, "sleep", Map.of(), 60_000);
    conn.assign(1, 1, 1, "{\"millis\": 30000}");
    conn.awaitFrame(e -> e.hasHeartbeat() && e.getHeartbeat().getInFlightList().contains(1L), WAIT);
    long before = System.nanoTime();

    session.drain();

    assertThat(session.awaitTermination(WAIT)).isTrue();
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).as("the timeout, not the case").isLessThan(5_000);
    assertThat(session.termination().kind()).isEqualTo(Termination.Kind.DRAIN_CUT_SHORT);
    assertThat(session.termination().detail()).contains("stopped 1 running cases");
    conn.awaitFrame(Envelope::hasGoodbye, WAIT);
    assertThat(resultsFor(conn, 1)).isZero();
  }

  @Test
  void aDrainingWorkerWithoutACoordinatorAndNothingRunningEndsAtOnce() throws Exception {
    WorkerSession session = start(1);
    FakeCoordinator.Conn conn = coordinator.awaitConnection(1);
    conn.awaitFrame(Envelope::hasHello, WAIT);
    conn.welcome(100);
    await().atMost(WAIT).until(session::connected);
    coordinator.close(); // tally run ended: nobody listens any more
    await().atMost(WAIT).until(() -> !session.connected());
    long before = System.nanoTime();

    session.drain();

    assertThat(session.awaitTermination(WAIT)).isTrue();
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before)).isLessThan(3_000);
    assertThat(session.termination().kind()).isEqualTo(Termination.Kind.DRAINED);
  }

  private static long count(ListAppender<ILoggingEvent> appender, Level level, String prefix) {
    synchronized (appender) { // AppenderBase.doAppend holds this lock
      return appender.list.stream()
          .filter(e -> e.getLevel() == level && e.getFormattedMessage().startsWith(prefix))
          .count();
    }
  }

  private static List<String> messages(ListAppender<ILoggingEvent> appender, Level level, String prefix) {
    synchronized (appender) { // AppenderBase.doAppend holds this lock
      return appender.list.stream()
          .filter(e -> e.getLevel() == level && e.getFormattedMessage().startsWith(prefix))
          .map(ILoggingEvent::getFormattedMessage)
          .toList();
    }
  }
}
