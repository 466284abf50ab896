package dev.tally.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import dev.tally.core.Verdict;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.InfraFailure;
import dev.tally.protocol.Result;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.RunConfig;
import dev.tally.protocol.Welcome;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.EvaluatorFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The session core alone: one thread, no sockets, time passed in. Every test drives it event by event and
 * reads what it asked of its port and its runner.
 */
class SessionCoreTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final long S = TimeUnit.SECONDS.toNanos(1);

  /** Records what the core asks of the world. */
  static final class RecordingPort implements SessionPort {
    final List<Envelope> sent = new ArrayList<>();
    int flushes;
    final List<Boolean> closes = new ArrayList<>();
    final List<Long> connects = new ArrayList<>();
    int joins;
    Termination ended;

    @Override
    public void joined() {
      joins++;
    }

    @Override
    public void send(Envelope frame) {
      sent.add(frame);
    }

    @Override
    public void flush() {
      flushes++;
    }

    @Override
    public void close(boolean afterWrites) {
      closes.add(afterWrites);
    }

    @Override
    public void connectIn(long delayNanos) {
      connects.add(delayNanos);
    }

    @Override
    public void ended(Termination termination) {
      ended = termination;
    }

    List<Result> results() {
      return sent.stream().filter(Envelope::hasResult).map(Envelope::getResult).toList();
    }

    List<Envelope> takeSent() {
      List<Envelope> out = List.copyOf(sent);
      sent.clear();
      return out;
    }
  }

  /** Slots that run nothing by themselves: a test starts and ends cases explicitly. */
  static final class ManualRunner implements CaseRunner {
    final Deque<AssignedJob> queued = new ArrayDeque<>();
    final Map<JobKey, AssignedJob> running = new LinkedHashMap<>();
    final List<JobKey> cancelled = new ArrayList<>();
    final int slots;

    ManualRunner(int slots) {
      this.slots = slots;
    }

    @Override
    public boolean start(AssignedJob job) {
      queued.add(job);
      return true;
    }

    @Override
    public boolean cancel(JobKey key, String reason) {
      cancelled.add(key);
      return queued.removeIf(j -> j.key().equals(key)) || running.remove(key) != null;
    }

    @Override
    public List<JobKey> withdrawQueued() {
      List<JobKey> keys = queued.stream().map(AssignedJob::key).toList();
      queued.clear();
      return keys;
    }

    /** Moves queued jobs into free slots, as slot threads would. */
    void startQueued() {
      while (running.size() < slots && !queued.isEmpty()) {
        AssignedJob job = queued.poll();
        running.put(job.key(), job);
      }
    }
  }

  private final RecordingPort port = new RecordingPort();
  private final ManualRunner runner = new ManualRunner(1);
  private final Outbox outbox = new Outbox(100);
  private final WorkerSettings settings = WorkerSettings.builder("coord", 7070).slots(1).maxQueuedAssignments(2)
      .workerId(UUID.fromString("00000000-0000-0000-0000-000000000001")).name("w").version("test")
      .evaluatorFactory(EvaluatorFactory::create).build();
  private final SessionCore core = new SessionCore(settings, port, runner, outbox,
      new Reconnector("coord:7070", new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(1)), null));

  private static Envelope welcome(int intervalMillis, String storeId) {
    return Envelope.newBuilder().setWelcome(Welcome.newBuilder().setSessionId("s").setHeartbeatIntervalMillis(intervalMillis)
        .setCoordinatorEpoch(1).setStoreId(storeId)).build();
  }

  private static Envelope runConfig(long runId, String evaluator) {
    return Envelope.newBuilder().setRunConfig(RunConfig.newBuilder().setRunId(runId).setEvaluator(evaluator)
        .setCaseTimeoutMillis(60_000)).build();
  }

  private static Envelope assign(long jobId, long token) {
    return Envelope.newBuilder().setAssign(Assign.newBuilder().setJobId(jobId).setRunId(1).setToken(token)
        .setAttempt(1).setCaseId("c" + jobId).setCaseJson(ByteString.copyFrom("{}", StandardCharsets.UTF_8))).build();
  }

  private static Envelope ack(long jobId, long token) {
    return Envelope.newBuilder().setResultAck(ResultAck.newBuilder().addEntries(
        AckEntry.newBuilder().setJobId(jobId).setToken(token).setStatus(AckEntry.Status.RECORDED))).build();
  }

  private static Envelope heartbeat() {
    return Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(1)).build();
  }

  /** Starts, connects and welcomes the core at time {@code t} (500 ms heartbeats), with run 1 on noop. */
  private void welcomedAt(long t) {
    core.start(t);
    core.connected(t);
    core.frameReceived(welcome(500, "store"), t);
    core.frameReceived(runConfig(1, "noop"), t);
    core.flush();
    port.takeSent();
    port.flushes = 0;
  }

  /** Reports the running case {@code key} as passed, having started at {@code startedNanos}. */
  private void pass(JobKey key, long startedNanos, long now) {
    outbox.tryReserveRoom(); // what a slot does before it starts a case
    runner.running.remove(key);
    core.caseEnded(new CaseEnd(key, Evaluation.finished(Verdict.PASS, null, "", 5), startedNanos), now);
    core.flush();
  }

  @Test
  void helloListsTheHeldJobsAndTheOutboxWithTheStoreTheyCameFrom() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    core.frameReceived(assign(2, 20), 0);
    runner.startQueued();
    pass(new JobKey(1, 10), 0, MS);

    core.disconnected("connection reset", 2 * MS);
    core.connected(3 * MS);

    Envelope hello = port.sent.get(port.sent.size() - 1);
    assertThat(hello.getHello().getWorkerId()).isEqualTo("00000000-0000-0000-0000-000000000001");
    assertThat(hello.getHello().getStoreId()).isEqualTo("store");
    assertThat(hello.getHello().getHeldList()).extracting(h -> h.getJobId() + "/" + h.getToken())
        .containsExactly("2/20", "1/10");
  }

  private static Envelope journalAck(long jobId, long token, String digest, dev.tally.protocol.JournalAck.Status status) {
    return Envelope.newBuilder().setJournalAck(dev.tally.protocol.JournalAck.newBuilder().setJobId(jobId)
        .setToken(token).setRequestDigest(digest).setStatus(status)).build();
  }

  @Test
  void anAssignsJournalReachesItsCaseAndAJournalEntryIsSentAgainAfterAReconnectUntilItIsAnswered() throws Exception {
    welcomedAt(0);
    core.frameReceived(Envelope.newBuilder().setAssign(assign(1, 10).getAssign().toBuilder()
        .addJournal(dev.tally.protocol.JournalledResponse.newBuilder().setRequestDigest("aa").setResponse("earlier"))).build(), 0);
    assertThat(runner.queued.peek().journalled()).containsExactly(java.util.Map.entry("aa", "earlier"));
    runner.startQueued();

    var answer = new java.util.concurrent.CompletableFuture<dev.tally.core.JournalEntry.Status>();
    core.journal(new dev.tally.core.JournalEntry(1, 10, "bb", "paid"), answer, MS);
    assertThat(port.takeSent()).extracting(e -> e.getJournalEntry().getRequestDigest() + "=" + e.getJournalEntry().getResponse())
        .containsExactly("bb=paid");

    // The connection drops before the answer: the entry goes out again with the next Welcome, before any result.
    core.disconnected("connection reset", 2 * MS);
    core.connected(3 * MS);
    core.frameReceived(welcome(500, "store"), 3 * MS);
    core.flush();
    assertThat(port.takeSent()).filteredOn(Envelope::hasJournalEntry).hasSize(1);
    assertThat(answer).isNotDone();

    core.frameReceived(journalAck(1, 10, "bb", dev.tally.protocol.JournalAck.Status.STORED), 4 * MS);
    assertThat(answer).isCompletedWithValue(dev.tally.core.JournalEntry.Status.STORED);
    core.disconnected("connection reset", 5 * MS);
    core.connected(6 * MS);
    core.frameReceived(welcome(500, "store"), 6 * MS);
    core.flush();
    assertThat(port.takeSent()).as("an answered entry is not sent again").noneMatch(Envelope::hasJournalEntry);
  }

  @Test
  void aJournalEntryIsRefusedForAnAttemptNotHeldAndFailsWhenItsAttemptIsAbandonedOrFenced() {
    welcomedAt(0);
    var notHeld = new java.util.concurrent.CompletableFuture<dev.tally.core.JournalEntry.Status>();
    core.journal(new dev.tally.core.JournalEntry(9, 9, "aa", "x"), notHeld, 0);
    assertThat(notHeld).isCompletedExceptionally();
    assertThat(port.takeSent()).isEmpty();

    core.frameReceived(assign(1, 10), 0);
    core.frameReceived(assign(2, 20), 0);
    var fenced = new java.util.concurrent.CompletableFuture<dev.tally.core.JournalEntry.Status>();
    core.journal(new dev.tally.core.JournalEntry(1, 10, "aa", "x"), fenced, 0);
    core.frameReceived(journalAck(1, 10, "aa", dev.tally.protocol.JournalAck.Status.FENCED), 0);
    assertThat(fenced).isCompletedWithValue(dev.tally.core.JournalEntry.Status.FENCED);

    var abandoned = new java.util.concurrent.CompletableFuture<dev.tally.core.JournalEntry.Status>();
    core.journal(new dev.tally.core.JournalEntry(2, 20, "aa", "x"), abandoned, 0);
    core.frameReceived(Envelope.newBuilder().setAbandon(dev.tally.protocol.Abandon.newBuilder().setJobId(2).setToken(20)
        .setReason("lease expired")).build(), 0);
    assertThat(abandoned).isCompletedExceptionally();
  }

  @Test
  void anAssignRunsOnTheRunnerAndItsResultSaysHowLongItWaitedForASlot() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 100 * MS);
    core.flush();
    assertThat(runner.queued).extracting(AssignedJob::key).containsExactly(new JobKey(1, 10));

    pass(new JobKey(1, 10), 350 * MS, 400 * MS);

    Result r = port.results().get(0);
    assertThat(r.getToken()).isEqualTo(10);
    assertThat(r.getOutcome().getVerdict()).isEqualTo(dev.tally.protocol.Verdict.PASS);
    assertThat(r.getQueuedMillis()).isEqualTo(250);
    assertThat(outbox.size()).isEqualTo(1);
    assertThat(core.completedCount()).isEqualTo(1);

    core.frameReceived(ack(1, 10), 500 * MS);
    assertThat(outbox.size()).isZero();
  }

  @Test
  void assignsThatCannotRunAreAnsweredAtOnceAndDuplicatesIgnored() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    core.frameReceived(assign(1, 10), 0); // duplicate
    core.frameReceived(Envelope.newBuilder().setAssign(assign(2, 1).getAssign().toBuilder().setRunId(77)).build(), 0);
    core.frameReceived(runConfig(3, "no-such-evaluator"), 0);
    core.frameReceived(Envelope.newBuilder().setAssign(assign(3, 1).getAssign().toBuilder().setRunId(3)).build(), 0);
    core.flush();

    assertThat(runner.queued).hasSize(1);
    assertThat(port.results()).extracting(r -> r.getJobId() + " " + r.getFailure().getKind() + " " + r.getFailure().getDetail())
        .satisfiesExactly(
            r -> assertThat(r).isEqualTo("2 EVALUATOR_CRASHED no RunConfig for run 77"),
            r -> assertThat(r).startsWith("3 EVALUATOR_CRASHED bad RunConfig for run 3: ").contains("no-such-evaluator"));
    assertThat(port.flushes).isEqualTo(1); // one flush for the batch
  }

  @Test
  void anAssignBeyondTheSlotsAndQueueIsAProtocolViolationThatClosesTheConnection() {
    welcomedAt(0);
    core.frameReceived(assign(1, 1), 0);
    core.frameReceived(assign(2, 1), 0);
    core.frameReceived(assign(3, 1), 0); // 1 slot + 2 queued
    assertThat(port.closes).isEmpty();

    core.frameReceived(assign(4, 1), 0);

    assertThat(port.closes).containsExactly(false);
    assertThat(runner.queued).hasSize(3);
    core.frameReceived(assign(5, 1), 0); // closing: ignored
    assertThat(runner.queued).hasSize(3);
  }

  @Test
  void abandonStopsAHeldJobAndItsLateEndIsNotReported() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    runner.startQueued();
    core.frameReceived(Envelope.newBuilder().setAbandon(dev.tally.protocol.Abandon.newBuilder().setJobId(1).setToken(9)).build(), 0);
    assertThat(runner.cancelled).as("another token: not this lease").isEmpty();

    core.frameReceived(Envelope.newBuilder().setAbandon(dev.tally.protocol.Abandon.newBuilder().setJobId(1).setToken(10)).build(), 0);
    assertThat(runner.cancelled).containsExactly(new JobKey(1, 10));
    int roomBefore = roomLeft();
    outbox.tryReserveRoom();
    core.caseEnded(new CaseEnd(new JobKey(1, 10), Evaluation.finished(Verdict.PASS, null, "", 1), 0), MS);

    assertThat(port.results()).isEmpty();
    assertThat(roomLeft()).as("the room its slot reserved came back").isEqualTo(roomBefore);
  }

  private int roomLeft() {
    int n = 0;
    while (outbox.tryReserveRoom()) {
      n++;
    }
    for (int i = 0; i < n; i++) {
      outbox.returnRoom();
    }
    return n;
  }

  @Test
  void aHeartbeatReportsHowLateThisWorkersOwnTimerRanSinceThePreviousOne() {
    welcomedAt(0);
    core.frameReceived(heartbeat(), 0);
    core.tick(core.nextTickNanos() + 30 * MS); // the liveness check, woken 30 ms late
    core.frameReceived(heartbeat(), 300 * MS);
    core.tick(500 * MS + 700 * MS); // the heartbeat, woken 700 ms late: this process was starved
    List<Envelope> beats = port.takeSent().stream().filter(Envelope::hasHeartbeat).toList();
    assertThat(beats).hasSize(1);
    assertThat(beats.get(0).getHeartbeat().getSchedulingLagMillis()).isEqualTo(700);

    core.frameReceived(heartbeat(), 1_300 * MS);
    for (long t = 1_250 * MS; t <= 2_500 * MS; t += 10 * MS) { // on time again
      core.frameReceived(heartbeat(), t);
      if (t - core.nextTickNanos() >= 0) {
        core.tick(t);
      }
    }
    beats = port.takeSent().stream().filter(Envelope::hasHeartbeat).toList();
    assertThat(beats).isNotEmpty().allSatisfy(b -> assertThat(b.getHeartbeat().getSchedulingLagMillis()).isZero());
  }

  @Test
  void heartbeatsGoOutEveryIntervalListingHeldJobsWithoutBurstsAfterAPause() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    assertThat(core.nextTickNanos()).isEqualTo(250 * MS); // the first liveness check comes first

    for (long t = 0; t <= 2 * S; t += 50 * MS) {
      core.frameReceived(heartbeat(), t); // a live coordinator
      core.tick(t);
    }
    List<Envelope> beats = port.takeSent().stream().filter(Envelope::hasHeartbeat).toList();
    assertThat(beats).hasSize(4); // at 0.5, 1.0, 1.5 and 2.0 s
    assertThat(beats).extracting(e -> e.getHeartbeat().getSeq()).containsExactly(1L, 2L, 3L, 4L);
    assertThat(beats.get(0).getHeartbeat().getInFlightList()).containsExactly(1L);

    core.tick(7 * S); // this process was paused for 5 s
    core.tick(7 * S + 10 * MS);
    assertThat(port.takeSent().stream().filter(Envelope::hasHeartbeat)).hasSize(1);
    assertThat(core.nextTickNanos()).isLessThanOrEqualTo(7 * S + 500 * MS);
  }

  @Test
  void aSilentCoordinatorIsConvictedAfterAboutTenSecondsButNotBefore() {
    welcomedAt(0);
    long lastFrame = 0;
    for (long t = 0; t <= 30 * S; t += 250 * MS) {
      core.frameReceived(heartbeat(), t);
      core.tick(t);
      lastFrame = t;
    }
    assertThat(port.closes).as("steady heartbeats: never convicted").isEmpty();

    long convictedAt = -1;
    for (long t = lastFrame + 250 * MS; t <= lastFrame + 20 * S && convictedAt < 0; t += 250 * MS) {
      core.tick(t);
      if (!port.closes.isEmpty()) {
        convictedAt = t;
      }
    }
    long silenceMillis = TimeUnit.NANOSECONDS.toMillis(convictedAt - lastFrame);
    assertThat(silenceMillis).isBetween(9_000L, 11_000L);
    assertThat(port.closes).containsExactly(false);
    assertThat(core.welcomed()).isFalse();

    core.disconnected("connection closed", convictedAt);
    assertThat(port.connects).hasSize(2); // the first, and the reconnect after the loss
    assertThat(port.connects.get(1)).isLessThanOrEqualTo(100 * MS); // the backoff starts over after a Welcome
  }

  @Test
  void aCheckThatComesLateBecauseThisProcessWasPausedDoesNotJudge() {
    welcomedAt(0);
    core.frameReceived(heartbeat(), 0);
    core.tick(250 * MS);

    core.tick(30 * S); // stopped for 30 s: the coordinator's frames may be waiting unread
    assertThat(port.closes).isEmpty();

    core.frameReceived(heartbeat(), 30 * S + 1 * MS); // they were
    core.tick(30 * S + 250 * MS);
    assertThat(port.closes).isEmpty();
  }

  @Test
  void aCoordinatorThatNeverWelcomesIsLeftAfterTheWelcomeTimeout() {
    core.start(0);
    core.connected(0);
    assertThat(core.nextTickNanos()).isEqualTo(SessionCore.WELCOME_TIMEOUT.toNanos());
    core.tick(SessionCore.WELCOME_TIMEOUT.toNanos() - 1);
    assertThat(port.closes).isEmpty();

    core.tick(SessionCore.WELCOME_TIMEOUT.toNanos());

    assertThat(port.closes).containsExactly(false);
    core.disconnected("connection closed", SessionCore.WELCOME_TIMEOUT.toNanos());
    assertThat(port.connects).hasSize(2);
  }

  @Test
  void aWorkerStarvedPastItsWelcomeDeadlineLooksOnceMoreBeforeLeaving() {
    core.start(0);
    core.connected(0);
    core.tick(SessionCore.WELCOME_TIMEOUT.toNanos() + 3 * S); // this process did not run for 3 s
    assertThat(port.closes).isEmpty();
    assertThat(core.nextTickNanos()).isEqualTo(SessionCore.WELCOME_TIMEOUT.toNanos() + 3 * S + 250 * MS);
    core.tick(SessionCore.WELCOME_TIMEOUT.toNanos() + 3 * S + 250 * MS); // on time, and still no Welcome
    assertThat(port.closes).containsExactly(false);
  }

  /** A core that gives up at its first failed attempt, so that the attempt's reason is in its end. */
  private SessionCore givingUpAtOnce(RecordingPort to) {
    return new SessionCore(settings, to, runner, outbox, new Reconnector("coord:7070",
        new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(1)), Duration.ofMillis(1)));
  }

  /** Regression: the reason read "no Welcome within 10 s of the Hello before Welcome". */
  @Test
  void aFailedAttemptSaysWhyOnceAndInWords() {
    RecordingPort silent = new RecordingPort();
    SessionCore waiting = givingUpAtOnce(silent);
    waiting.start(0);
    waiting.connected(0);
    waiting.tick(SessionCore.WELCOME_TIMEOUT.toNanos());
    waiting.disconnected("connection closed", SessionCore.WELCOME_TIMEOUT.toNanos());
    assertThat(silent.ended.detail()).endsWith("the last: the coordinator sent no Welcome within 10 s of the Hello");

    RecordingPort web = new RecordingPort();
    SessionCore http = givingUpAtOnce(web);
    http.start(0);
    http.connected(0);
    http.notACoordinator("not a Tally coordinator (it answered like an HTTP server)", MS);
    assertThat(web.closes).containsExactly(false);
    http.disconnected("connection closed", MS);
    assertThat(web.ended.detail()).endsWith("the last: not a Tally coordinator (it answered like an HTTP server)");

    RecordingPort closing = new RecordingPort();
    SessionCore closed = givingUpAtOnce(closing);
    closed.start(0);
    closed.connected(0);
    closed.disconnected("connection closed", MS);
    assertThat(closing.ended.detail()).as("the transport's reason says when").endsWith("the last: connection closed before a Welcome");
  }

  @Test
  void frameBeforeTheWelcomeOrASecondWelcomeIsAProtocolViolation() {
    core.start(0);
    core.connected(0);
    core.frameReceived(assign(1, 1), 0);
    assertThat(port.closes).containsExactly(false);
    assertThat(runner.queued).isEmpty();

    core.disconnected("closed", 0);
    core.connected(MS);
    core.frameReceived(welcome(500, "s"), MS);
    core.frameReceived(welcome(500, "s"), MS);
    assertThat(port.closes).hasSize(2);
  }

  @Test
  void theFirstWelcomeIsTheWorkerJoiningAndAReconnectIsNot() {
    core.start(0);
    core.connectFailed("Connection refused", MS); // trouble first: the coordinator was not up yet
    core.connected(2 * MS);
    assertThat(port.joins).isZero();
    core.frameReceived(welcome(500, "s"), 2 * MS);
    assertThat(port.joins).isEqualTo(1);

    core.disconnected("closed", 3 * MS);
    core.connected(4 * MS);
    core.frameReceived(welcome(500, "s"), 4 * MS);
    assertThat(port.joins).as("a rejoin is logged by the core, not announced again").isEqualTo(1);
  }

  @Test
  void theCoordinatorsNoticesAreLoggedAtWarn() {
    ch.qos.logback.classic.Logger logger = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(SessionCore.class);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> appender = new ch.qos.logback.core.read.ListAppender<>();
    appender.start();
    logger.addAppender(appender);
    try {
      core.start(0);
      core.connected(0);
      core.frameReceived(welcome(500, "s").toBuilder()
          .setWelcome(welcome(500, "s").getWelcome().toBuilder().addNotices("another worker already goes by the name 'w'")).build(), MS);
      assertThat(appender.list).filteredOn(e -> e.getLevel() == ch.qos.logback.classic.Level.WARN)
          .extracting(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage)
          .containsExactly("the coordinator at coord:7070 says: another worker already goes by the name 'w'");
    } finally {
      logger.detachAppender(appender);
    }
  }

  @Test
  void aWelcomeFromAnotherStoreDropsTheOutboxAndStopsHeldJobs() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    core.frameReceived(assign(2, 20), 0);
    runner.startQueued();
    pass(new JobKey(1, 10), 0, MS);
    core.disconnected("closed", 2 * MS);
    core.connected(3 * MS);
    port.takeSent();

    core.frameReceived(welcome(500, "another-store"), 4 * MS);
    core.flush();

    assertThat(outbox.size()).isZero();
    assertThat(runner.cancelled).containsExactly(new JobKey(2, 20));
    assertThat(port.results()).isEmpty();
    assertThat(core.heldCount()).isZero();
  }

  @Test
  void afterAReconnectTheWelcomeResendsTheWholeOutbox() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    runner.startQueued();
    core.disconnected("closed", MS);
    pass(new JobKey(1, 10), 0, 2 * MS); // finished while disconnected: not sent
    assertThat(port.results()).isEmpty();

    core.connected(3 * MS);
    core.frameReceived(welcome(500, "store"), 3 * MS);
    core.flush();

    assertThat(port.results()).extracting(Result::getJobId).containsExactly(1L);
  }

  @Test
  void aDrainHandsBackQueuedJobsAndLaterAssignsAndEndsOnceTheRunningCaseIsAcked() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    core.frameReceived(assign(2, 20), 0);
    runner.startQueued();
    core.flush();

    core.drain(S, Duration.ofSeconds(30));

    List<Envelope> sent = port.takeSent();
    assertThat(sent.get(0).hasDrain()).as("Drain first, so the coordinator stops assigning").isTrue();
    assertThat(sent.get(1).getResult().getJobId()).isEqualTo(2);
    assertThat(sent.get(1).getResult().getFailure().getKind()).isEqualTo(InfraFailure.Kind.HANDED_BACK);
    assertThat(sent.get(1).getResult().getQueuedMillis()).isZero();
    core.frameReceived(assign(3, 30), 2 * S);
    core.flush();
    assertThat(port.results()).extracting(r -> r.getJobId() + " " + r.getFailure().getKind()).containsExactly("3 HANDED_BACK");
    core.frameReceived(ack(2, 20), 2 * S);
    core.frameReceived(ack(3, 30), 2 * S);
    assertThat(core.nextTickNanos()).as("heartbeats go on").isLessThan(31 * S);

    pass(new JobKey(1, 10), 0, 10 * S);
    assertThat(port.ended).as("waiting for the ack").isNull();
    core.frameReceived(ack(1, 10), 11 * S);

    assertThat(port.ended.kind()).isEqualTo(Termination.Kind.DRAINED);
    assertThat(port.sent.get(port.sent.size() - 1).getGoodbye()).isEqualTo(Goodbye.newBuilder().setReason("worker drained").build());
    assertThat(port.closes).containsExactly(true);
  }

  @Test
  void aDrainThatOutlastsItsTimeoutStopsTheRunningCase() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    runner.startQueued();

    core.drain(S, Duration.ofSeconds(5));
    core.tick(5 * S);
    assertThat(port.ended).isNull();
    core.tick(6 * S);

    assertThat(port.ended.kind()).isEqualTo(Termination.Kind.DRAIN_CUT_SHORT);
    assertThat(runner.cancelled).containsExactly(new JobKey(1, 10));
    assertThat(port.sent.get(port.sent.size() - 1).hasGoodbye()).isTrue();
  }

  @Test
  void aDrainingWorkerThatLosesItsCoordinatorWithNothingRunningEndsAtOnce() {
    welcomedAt(0);
    core.drain(S, Duration.ofSeconds(30));
    assertThat(port.ended.kind()).as("nothing held, nothing to deliver").isEqualTo(Termination.Kind.DRAINED);

    SessionCore other = new SessionCore(settings, port, runner, outbox,
        new Reconnector("coord:7070", new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(1)), null));
    port.ended = null;
    other.start(0);
    other.connected(0);
    other.frameReceived(welcome(500, "store"), 0);
    other.frameReceived(runConfig(1, "noop"), 0);
    other.frameReceived(assign(1, 10), 0);
    runner.startQueued();
    other.drain(S, Duration.ofSeconds(30));
    other.disconnected("connection closed", 2 * S); // the coordinator went away
    assertThat(port.ended).as("a case still runs").isNull();

    outbox.tryReserveRoom();
    runner.running.clear();
    other.caseEnded(new CaseEnd(new JobKey(1, 10), Evaluation.finished(Verdict.PASS, null, "", 1), 0), 3 * S);

    assertThat(port.ended.kind()).isEqualTo(Termination.Kind.DRAIN_CUT_SHORT);
    assertThat(port.ended.detail()).contains("without a coordinator to deliver 1 results to");
  }

  @Test
  void stopSaysGoodbyeCancelsEverythingAndEnds() {
    welcomedAt(0);
    core.frameReceived(assign(1, 10), 0);
    runner.startQueued();

    core.stop("worker closing");

    assertThat(port.sent.get(port.sent.size() - 1).getGoodbye().getReason()).isEqualTo("worker closing");
    assertThat(runner.cancelled).containsExactly(new JobKey(1, 10));
    assertThat(port.ended.kind()).isEqualTo(Termination.Kind.STOPPED);
    assertThat(core.nextTickNanos()).isEqualTo(SessionCore.NO_TICK);
    core.frameReceived(assign(2, 1), S);
    assertThat(runner.queued).isEmpty();
  }

  @Test
  void aWorkerWithAGiveUpTimeEndsAtTheFirstFailedAttemptPastIt() {
    SessionCore giving = new SessionCore(settings, port, runner, outbox, new Reconnector("coord:7070",
        new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), new SplittableRandom(1)), Duration.ofSeconds(10)));
    giving.start(0);
    long t = 0;
    while (port.ended == null && t < 60 * S) {
      long delay = port.connects.get(port.connects.size() - 1);
      t += delay + 5 * MS;
      assertThat(t).as("no attempt is scheduled past the give-up time").isLessThanOrEqualTo(10 * S + 5 * MS);
      giving.connectFailed("Connection refused", t);
    }
    assertThat(port.ended.kind()).isEqualTo(Termination.Kind.GAVE_UP);
    assertThat(t).isGreaterThanOrEqualTo(10 * S);
    assertThat(port.ended.detail()).contains("no Welcome from the coordinator at coord:7070").contains("Connection refused");
  }
}
