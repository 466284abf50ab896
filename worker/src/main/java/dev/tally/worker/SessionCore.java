package dev.tally.worker;

import dev.tally.core.InfraFailure;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.FailureDetector;
import dev.tally.core.detect.PhiAccrualDetector;
import dev.tally.protocol.Abandon;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Drain;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.HeldJob;
import dev.tally.protocol.JournalAck;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Result;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.RunConfig;
import dev.tally.protocol.Welcome;
import dev.tally.protocol.mapping.WireMapping;
import dev.tally.core.JournalEntry;
import dev.tally.worker.eval.CaseAttempt;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's side of the protocol as a state machine: what a worker says and does in answer to each
 * event, with no sockets, threads or clocks. Time comes in as monotonic nanoseconds with each event; what
 * the core decides goes out through a {@link SessionPort} (frames, closes, connects, the end) and a
 * {@link CaseRunner} (cases to run or stop). The Netty driver {@link WorkerSession} feeds it from a real
 * socket and slot threads; the deterministic simulation can feed it from virtual ones, so that a seed runs
 * the same decisions as a worker process.
 *
 * <h2>Events</h2>
 *
 * {@link #start}, {@link #connected}, {@link #connectFailed}, {@link #frameReceived} (then {@link
 * #flush} after a batch of them), {@link #notACoordinator}, {@link #disconnected}, {@link #caseEnded},
 * {@link #tick} (at or after {@link #nextTickNanos()}), {@link #drain} and {@link #stop}.
 *
 * <h2>What it decides</h2>
 *
 * <ul>
 *   <li><b>Hello</b> on every connection: worker id, name, slots, version, the worker token if it has one,
 *       the store its jobs came from, and every attempt it holds (running, queued, or with a result in the outbox). A coordinator that
 *       sends no Welcome within {@link #WELCOME_TIMEOUT} is left, and the attempt counts as failed (a deadline
 *       checked more than {@link #LATE_CHECKS} liveness periods late, this worker having been starved, is
 *       checked once more first).
 *   <li><b>Welcome</b>: heartbeats start at its interval, the coordinator's liveness is judged from then
 *       on, and the whole outbox is sent again. A Welcome from a coordinator on another store than the
 *       one this worker's jobs and results came from drops them all and stops those jobs: job ids and
 *       tokens only mean something within one store, and their own store runs them again. Its notices
 *       (another worker has this one's name) are logged at WARN.
 *   <li><b>RunConfig</b> builds the run's evaluator, once per run per session.
 *   <li><b>Assign</b> starts the case on the runner, unless it is a duplicate (ignored), the worker is
 *       draining (handed back: {@code HANDED_BACK}), its run has no usable RunConfig (refused at once with a
 *       retryable {@code EVALUATOR_CRASHED}), or it would hold more than {@code slots +
 *       maxQueuedAssignments} attempts (more than any dispatch window: a coordinator bug, which closes the
 *       connection).
 *   <li>A case's paid response ({@link #journal}) becomes a {@code JournalEntry}, sent at once when
 *       welcomed and again after every Welcome until its {@code JournalAck} comes; the case's slot waits
 *       for that answer. An Assign's {@code journal} (what earlier attempts journalled) goes to the case.
 *   <li>A case's end becomes a Result (with {@code queued_millis}, the time between its Assign and its
 *       start) in the {@link Outbox}, sent at once when welcomed; a <b>ResultAck</b> of any status drops
 *       it from the outbox.
 *   <li><b>Abandon</b> stops the attempt if it is still held (queued or running); it is never reported: its
 *       lease is gone, so a report could only be fenced. A finished one keeps its outbox entry.
 *   <li><b>Drain</b> from the coordinator: Assigns are handed back for the rest of the session; held jobs
 *       finish. <b>Goodbye</b> is noted as the reason of the close that follows; a Goodbye of code {@code
 *       UNAUTHENTICATED} or {@code TLS_REQUIRED} (its worker token was refused, or it spoke plaintext to a
 *       TLS port from elsewhere) ends the session {@link Termination.Kind#REFUSED}: reconnecting with the
 *       same configuration would be refused again, for ever.
 *   <li><b>Heartbeats</b> every Welcome interval, listing the jobs held and how late this worker's own
 *       timer ran at worst since the previous one (its scheduling lag: a starved worker says so, and the
 *       coordinator allows for it); a frame before the Welcome, a
 *       second Welcome or an Envelope without a body is a protocol violation and closes the connection.
 *   <li><b>The coordinator's liveness</b>: every frame from it feeds a φ accrual detector (see {@link
 *       #COORDINATOR_ACCEPTABLE_PAUSE}); when it convicts, the connection is closed and the worker
 *       reconnects with its backoff, keeping its outbox and its running cases. This is what finds a
 *       half-open connection (a dead host, a dropped network path) long before TCP would.
 *   <li><b>Reconnecting</b> after a loss or a failed attempt, through the {@link Reconnector} (backoff,
 *       logging, giving up).
 *   <li><b>Graceful drain</b> ({@link #drain}): see there. <b>Stop</b> ({@link #stop}): Goodbye, cancel
 *       everything, end.
 * </ul>
 *
 * <p>Threading: not thread-safe; every event must come from one thread (the session's event loop).
 * {@link #welcomed()} and {@link #completedCount()} may be read from any thread.
 */
public final class SessionCore {
  private static final Logger log = LoggerFactory.getLogger(SessionCore.class);

  /**
   * How long a worker waits for a Welcome after its Hello before it leaves the connection and tries again.
   * A coordinator answers a Hello at once (after a superseded session's end, milliseconds later), so only a
   * coordinator that is gone, frozen or unreachable behind an accepting middlebox keeps a worker waiting
   * this long; it equals the silence that convicts a welcomed coordinator (about 10 s at the default
   * interval, see {@link #COORDINATOR_ACCEPTABLE_PAUSE}), so neither judgement is more patient than the
   * other.
   */
  public static final Duration WELCOME_TIMEOUT = Duration.ofSeconds(10);

  /**
   * The silence beyond its usual interval that a worker forgives its coordinator: the φ accrual detector's
   * acceptable pause. With the default 500 ms interval and φ threshold 8 it convicts after about 10 s of
   * silence on a steady link ({@code interval + pause + 5.2 x 100 ms}).
   *
   * <p>Why far more patient than the coordinator's 1.5 s for its workers: the costs are not symmetric. A
   * coordinator that convicts a live worker loses that worker's jobs; a fleet that convicts a live
   * coordinator drops every connection at once, and every running job is released and run again (the
   * late results are fenced). A coordinator has long pauses of its own (a full GC, a stalled disk under its
   * event loop, SIGSTOP in a test), during which its workers must wait: {@code
   * WorkerFailureProcessTest} pauses one for 4 s and requires no worker to be lost. Conviction only
   * shortens what TCP would end after a minute or more (the reported case: 56 s), so 10 s keeps the gain
   * while staying clear of any pause a healthy coordinator takes.
   */
  public static final Duration COORDINATOR_ACCEPTABLE_PAUSE = Duration.ofSeconds(9);

  /**
   * How often the coordinator's liveness is judged once welcomed. A quarter second is 2.5% of the
   * detection window: conviction comes at most that late, for four wake-ups a second.
   */
  static final Duration LIVENESS_CHECK_PERIOD = Duration.ofMillis(250);

  /**
   * A liveness check that comes more than this many periods after the previous one finds that this
   * process was paused (a GC pause, SIGSTOP): the silence was ours, and the coordinator's frames may still
   * be unread in the socket, so it does not judge. Four periods (1 s) is far beyond scheduling noise and
   * delays a real conviction by one period at most.
   */
  static final int LATE_CHECKS = 4;

  /** The heartbeat interval used if a Welcome gives 0 (a coordinator bug; logged): the product default. */
  static final Duration FALLBACK_HEARTBEAT_INTERVAL = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;

  /** Returned by {@link #nextTickNanos()} when nothing is due. */
  public static final long NO_TICK = Long.MAX_VALUE;

  private enum State {
    /** No connection: one is being made, or will be after a backoff. */
    DISCONNECTED,
    /** Connected, Hello sent, no Welcome yet. */
    AWAITING_WELCOME,
    WELCOMED,
    /** This side asked the port to close; waiting for {@link #disconnected}. */
    CLOSING,
    ENDED
  }

  private final WorkerSettings settings;
  private final SessionPort port;
  private final CaseRunner runner;
  private final Outbox outbox;
  private final Reconnector reconnector;
  /** The coordinator's address as the log names it: the one of the current (or last) connection. */
  private String coordinator;

  private State state = State.DISCONNECTED;
  /**
   * Journal entries sent (or to send, once welcomed) and not yet answered, in the order made: at most one
   * per running case, whose slot waits for the answer. Re-sent after every Welcome, like the outbox.
   */
  private final Map<JournalWait, PendingJournal> journal = new LinkedHashMap<>();
  private boolean started;
  /** Whether any Welcome came since the start: the first one is the worker joining, the rest rejoining. */
  private boolean everWelcomed;
  /** Whether the current (or closing) connection was welcomed: its end is a lost session, not a failed attempt. */
  private boolean sessionWelcomed;
  /** Why this side is closing the current connection, for the log line of its end. */
  private String closeReason;
  /** Why the last connection or attempt ended, for a drain that ends without a coordinator. */
  private String lastLossReason = "no connection yet";
  /** The store (Welcome.store_id) the held jobs and the outbox came from; empty before the first Welcome. */
  private String storeId = "";
  private final Map<Long, RunSetup> runs = new HashMap<>();
  /** Attempts given to the runner and not yet ended, cancelled or withdrawn, in assignment order. */
  private final Map<JobKey, AssignedJob> held = new LinkedHashMap<>();
  /** The coordinator sent Drain on this session: Assigns are handed back until the next session. */
  private boolean coordinatorDrain;
  private boolean flushPending;

  private long welcomeDeadlineNanos;
  private long heartbeatIntervalNanos;
  private long nextHeartbeatNanos;
  private long heartbeatSeq;
  /**
   * The worst lateness of a {@link #tick} since the last heartbeat went out: how much later than {@link
   * #nextTickNanos()} asked it came. Sent in the next heartbeat, so that the coordinator allows for this
   * worker being starved (see {@code Heartbeat.scheduling_lag_millis}).
   */
  private long worstTickLagNanos;
  private FailureDetector coordinatorDetector;
  private long lastFrameNanos;
  private long lastCheckNanos;
  private long nextCheckNanos;

  private boolean draining;
  private long drainDeadlineNanos;

  private volatile boolean welcomed;
  private volatile long completed;

  /**
   * @param settings the worker's identity and limits (its host and port only name the coordinator in logs)
   * @param port carries out the core's decisions
   * @param runner runs the cases
   * @param outbox holds the results until acknowledged; the runner reserves room in it
   * @param reconnector decides when to reconnect and when to give up
   */
  public SessionCore(WorkerSettings settings, SessionPort port, CaseRunner runner, Outbox outbox, Reconnector reconnector) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.port = Objects.requireNonNull(port, "port");
    this.runner = Objects.requireNonNull(runner, "runner");
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.reconnector = Objects.requireNonNull(reconnector, "reconnector");
    this.coordinator = settings.host() + ":" + settings.port();
  }

  // ---------------------------------------------------------------- observers (any thread)

  /** True while a connection is up and welcomed. Safe from any thread. */
  public boolean welcomed() {
    return welcomed;
  }

  /** Cases that ran to an evaluation and went into the outbox (abandoned ones not counted). Any thread. */
  public long completedCount() {
    return completed;
  }

  /** Attempts held (queued or running). Core thread only. */
  public int heldCount() {
    return held.size();
  }

  /** Whether a graceful drain is under way. Core thread only. */
  public boolean draining() {
    return draining;
  }

  /**
   * The earliest time at which {@link #tick} has something to do (a heartbeat, a liveness check, the
   * Welcome or drain deadline), or {@link #NO_TICK}. Changes only through events; a tick earlier than it
   * is harmless.
   */
  public long nextTickNanos() {
    long next = NO_TICK;
    if (state == State.AWAITING_WELCOME) {
      next = welcomeDeadlineNanos;
    } else if (state == State.WELCOMED) {
      next = Math.min(nextHeartbeatNanos, nextCheckNanos);
    }
    if (draining && state != State.ENDED) {
      next = Math.min(next, drainDeadlineNanos);
    }
    return next;
  }

  // ---------------------------------------------------------------- connection events

  /**
   * The worker starts: the first connection is made at once.
   *
   * @throws IllegalStateException if called twice
   */
  public void start(long nowNanos) {
    if (started) {
      throw new IllegalStateException("start may be called once");
    }
    started = true;
    reconnector.started(nowNanos);
    port.connectIn(0);
  }

  /**
   * A connection to the coordinator at {@code address} is up ({@code host:port}, one of several a worker may
   * know): says Hello, and the log names that address from now on.
   */
  public void connected(String address, long nowNanos) {
    coordinator = address;
    connected(nowNanos);
  }

  /** A connection to the coordinator is up: says Hello. */
  public void connected(long nowNanos) {
    if (state != State.DISCONNECTED) {
      return;
    }
    state = State.AWAITING_WELCOME;
    welcomeDeadlineNanos = nowNanos + WELCOME_TIMEOUT.toNanos();
    Hello.Builder hello = Hello.newBuilder()
        .setWorkerId(settings.workerId().toString())
        .setName(settings.name())
        .setSlots(settings.slots())
        .setVersion(settings.version())
        .setStoreId(storeId);
    if (settings.token() != null) {
      hello.setCredentials(settings.token().reveal());
    }
    Set<JobKey> holding = new LinkedHashSet<>(held.keySet());
    holding.addAll(outbox.keys());
    for (JobKey k : holding) {
      hello.addHeld(HeldJob.newBuilder().setJobId(k.jobId()).setToken(k.token()));
    }
    port.send(Envelope.newBuilder().setHello(hello).build());
    port.flush();
  }

  /** A connection could not be made (refused, unresolvable, timed out, connected to itself). */
  public void connectFailed(String reason, long nowNanos) {
    if (state != State.DISCONNECTED) {
      return;
    }
    attemptFailed(reason, nowNanos);
  }

  /**
   * The current connection ended, for {@code reason} (the transport's; a reason this side gave when it
   * closed the connection wins).
   */
  public void disconnected(String reason, long nowNanos) {
    if (state == State.ENDED || state == State.DISCONNECTED) {
      return;
    }
    boolean wasWelcomed = sessionWelcomed;
    boolean closedHere = closeReason != null;
    String why = closedHere ? closeReason : reason;
    closeReason = null;
    lastLossReason = why;
    sessionWelcomed = false;
    welcomed = false;
    coordinatorDetector = null;
    flushPending = false;
    state = State.DISCONNECTED;
    if (draining && held.isEmpty()) {
      endDrainWithoutCoordinator(why);
      return;
    }
    if (wasWelcomed) {
      log.warn("lost the coordinator at {}: {}; reconnecting ({} results in the outbox, {} jobs held)",
          coordinator, why, outbox.size(), held.size());
      port.connectIn(reconnector.sessionLost(nowNanos));
    } else {
      // A reason this side gave says what went wrong in full; the transport's ("connection closed") needs
      // to say when it happened.
      attemptFailed(closedHere ? why : why + " before a Welcome", nowNanos);
    }
  }

  /**
   * The peer at the coordinator's address does not speak Tally's protocol (it answered like an HTTP
   * server, say): the connection is closed, and its end reported ({@link #disconnected}) with {@code
   * why}, a sentence for the user such as "not a Tally coordinator (it answered like an HTTP server)".
   * Before a Welcome that is a failed attempt, retried with the backoff: the right coordinator may come
   * up at that address yet.
   */
  public void notACoordinator(String why, long nowNanos) {
    if (state == State.AWAITING_WELCOME || state == State.WELCOMED) {
      closeConnection(why, false);
    }
  }

  private void attemptFailed(String reason, long nowNanos) {
    lastLossReason = reason;
    if (draining && held.isEmpty()) {
      endDrainWithoutCoordinator(reason);
      return;
    }
    Reconnector.Decision decision = reconnector.attemptFailed(reason, nowNanos);
    if (decision.giveUp()) {
      log.error(decision.message());
      for (JobKey key : List.copyOf(held.keySet())) {
        runner.cancel(key, "worker gave up on its coordinator");
      }
      held.clear();
      end(Termination.Kind.GAVE_UP, decision.message());
      return;
    }
    port.connectIn(decision.delayNanos());
  }

  /**
   * Closes the current connection from this side; its end ({@link #disconnected}) is logged with
   * {@code reason}.
   */
  private void closeConnection(String reason, boolean afterWrites) {
    closeReason = reason;
    state = State.CLOSING;
    welcomed = false;
    port.close(afterWrites);
  }

  /**
   * The coordinator refused this worker for a reason that reconnecting cannot mend (a missing or wrong
   * worker token, plaintext where TLS is required): the session ends {@link Termination.Kind#REFUSED}
   * instead of retrying for ever; held cases are stopped and unacknowledged results dropped with it (the
   * coordinator runs their jobs again elsewhere).
   */
  private void refused(String reason) {
    String detail = "the coordinator at " + coordinator + " refused this worker: " + reason;
    log.error(detail);
    closeConnection(detail, false);
    for (JobKey key : List.copyOf(held.keySet())) {
      runner.cancel(key, "the coordinator refused this worker");
    }
    held.clear();
    end(Termination.Kind.REFUSED, detail);
  }

  private void protocolViolation(String what) {
    log.error("protocol violation: {}; closing the connection", what);
    closeConnection("closed it after a protocol violation (" + what + ")", false);
  }

  // ---------------------------------------------------------------- frames

  /** A frame arrived from the coordinator. Call {@link #flush} after the batch it came in. */
  public void frameReceived(Envelope env, long nowNanos) {
    if (state != State.AWAITING_WELCOME && state != State.WELCOMED) {
      return; // closing or ended: nothing it says changes that
    }
    lastFrameNanos = nowNanos;
    if (coordinatorDetector != null) {
      coordinatorDetector.heartbeat(nowNanos);
    }
    switch (env.getBodyCase()) {
      case WELCOME -> {
        if (state == State.WELCOMED) {
          protocolViolation("a second Welcome on one session");
        } else {
          onWelcome(env.getWelcome(), nowNanos);
        }
      }
      case GOODBYE -> {
        Goodbye goodbye = env.getGoodbye();
        if (goodbye.getCode() == Goodbye.Code.UNAUTHENTICATED || goodbye.getCode() == Goodbye.Code.TLS_REQUIRED) {
          refused(goodbye.getReason());
          return;
        }
        closeReason = "coordinator said goodbye: " + goodbye.getReason();
        log.info("coordinator said goodbye: {}", goodbye.getReason());
      }
      case BODY_NOT_SET -> protocolViolation("an Envelope with no body");
      case HELLO, RESULT, JOURNAL_ENTRY -> log.warn("ignoring a {} from the coordinator (a worker's message)", env.getBodyCase());
      default -> {
        if (state != State.WELCOMED) {
          protocolViolation("a " + env.getBodyCase() + " before the Welcome");
          return;
        }
        switch (env.getBodyCase()) {
          case RUN_CONFIG -> onRunConfig(env.getRunConfig());
          case ASSIGN -> onAssign(env.getAssign(), nowNanos);
          case RESULT_ACK -> onResultAck(env.getResultAck(), nowNanos);
          case JOURNAL_ACK -> onJournalAck(env.getJournalAck());
          case ABANDON -> onAbandon(env.getAbandon(), nowNanos);
          case HEARTBEAT -> { } // the coordinator's proof of life; its arrival was the point
          case DRAIN -> {
            coordinatorDrain = true;
            log.info("the coordinator drains this worker: {} ({} jobs held); new assignments are handed back",
                env.getDrain().getReason(), held.size());
          }
          default -> log.warn("ignoring an unknown {} from the coordinator", env.getBodyCase());
        }
      }
    }
  }

  /** Flushes what the events since the last flush wrote (one flush per read batch or batch of results). */
  public void flush() {
    if (flushPending) {
      flushPending = false;
      if (state == State.WELCOMED || state == State.AWAITING_WELCOME) {
        port.flush();
      }
    }
  }

  private void send(Envelope frame) {
    port.send(frame);
    flushPending = true;
  }

  private void onWelcome(Welcome welcome, long nowNanos) {
    long intervalMillis = Integer.toUnsignedLong(welcome.getHeartbeatIntervalMillis());
    if (intervalMillis == 0) {
      log.warn("Welcome has no heartbeat interval; using {} ms", FALLBACK_HEARTBEAT_INTERVAL.toMillis());
      intervalMillis = FALLBACK_HEARTBEAT_INTERVAL.toMillis();
    }
    String welcomingStore = welcome.getStoreId();
    if (!welcomingStore.equals(storeId) && (!outbox.isEmpty() || !held.isEmpty())) {
      dropJobsOfAnotherStore(welcomingStore);
    }
    storeId = welcomingStore;
    state = State.WELCOMED;
    sessionWelcomed = true;
    welcomed = true;
    coordinatorDrain = false; // a Drain belongs to the session that sent it
    runs.clear(); // RunConfig is sent once per run per session; held jobs keep their own setup
    long without = reconnector.welcomed(nowNanos);

    heartbeatIntervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMillis);
    nextHeartbeatNanos = nowNanos + heartbeatIntervalNanos;
    coordinatorDetector = coordinatorDetector(Duration.ofMillis(intervalMillis)).newDetector(nowNanos);
    lastFrameNanos = nowNanos;
    lastCheckNanos = nowNanos;
    nextCheckNanos = nowNanos + LIVENESS_CHECK_PERIOD.toNanos();

    List<Result> resend = outbox.frames();
    if (draining) {
      send(drainFrame()); // first, so that the coordinator assigns nothing more before the results
    }
    for (PendingJournal j : journal.values()) {
      send(j.frame()); // before the results: a case's response is journalled before it is reported
    }
    for (Result r : resend) {
      send(Envelope.newBuilder().setResult(r).build());
    }
    boolean first = !everWelcomed;
    everWelcomed = true;
    if (without >= 0 && !first) {
      // Trouble was reported at WARN (a lost session, failed attempts): so is its end.
      log.warn("reconnected to the coordinator at {} after {} without one (session {}, epoch {}); re-sent {} results",
          coordinator, Reconnector.human(without), welcome.getSessionId(), welcome.getCoordinatorEpoch(), resend.size());
    } else {
      log.info("welcomed by the coordinator at {} (session {}, epoch {}, heartbeat every {} ms); re-sent {} results",
          coordinator, welcome.getSessionId(), welcome.getCoordinatorEpoch(), intervalMillis, resend.size());
    }
    for (String notice : welcome.getNoticesList()) {
      log.warn("the coordinator at {} says: {}", coordinator, notice);
    }
    if (first) {
      port.joined(); // the driver says so to a person, whether or not attempts failed before
    }
    checkDrainDone();
  }

  /** The detector a worker judges its coordinator with, for the Welcome's heartbeat interval. */
  static PhiAccrualDetector.Config coordinatorDetector(Duration heartbeatInterval) {
    return PhiAccrualDetector.builder()
        .heartbeatInterval(heartbeatInterval)
        .acceptableHeartbeatPause(COORDINATOR_ACCEPTABLE_PAUSE)
        .build();
  }

  /**
   * The coordinator now records into another store than the one this worker's jobs and unacknowledged
   * results came from (a different coordinator took over the address). Their job ids and tokens would
   * match unrelated jobs there, so they are dropped, and held cases stopped; their own store's
   * coordinator re-runs them when their leases expire (at-least-once).
   */
  private void dropJobsOfAnotherStore(String welcomingStore) {
    int results = outbox.dropAll();
    dropJournal(null, "the coordinator now serves another store");
    int jobs = 0;
    for (JobKey key : List.copyOf(held.keySet())) {
      runner.cancel(key, "the coordinator now serves another store");
      jobs++;
    }
    held.clear();
    log.warn("the coordinator at {} records into store '{}', not '{}' where this worker's jobs came from: "
            + "dropped {} unacknowledged results and stopped {} jobs (their own store re-runs them)",
        coordinator, welcomingStore, storeId, results, jobs);
  }

  private void onRunConfig(RunConfig rc) {
    Duration timeout = Duration.ofMillis(rc.getCaseTimeoutMillis());
    RunSetup setup;
    if (rc.getCaseTimeoutMillis() <= 0 || rc.getCaseTimeoutMillis() > dev.tally.core.Ticker.MAX_DURATION.toMillis()) {
      setup = RunSetup.unusable(rc.getRunId(), Duration.ZERO, "case_timeout_millis must be from 1 to "
          + dev.tally.core.Ticker.MAX_DURATION.toMillis() + ", got " + Long.toUnsignedString(rc.getCaseTimeoutMillis()));
    } else {
      try {
        Evaluator evaluator = settings.evaluatorFactory().apply(rc.getEvaluator(), rc.getOptionsMap());
        setup = evaluator != null
            ? RunSetup.usable(rc.getRunId(), evaluator, timeout)
            : RunSetup.unusable(rc.getRunId(), timeout, "no evaluator '" + rc.getEvaluator() + "'");
      } catch (RuntimeException e) {
        setup = RunSetup.unusable(rc.getRunId(), timeout, String.valueOf(e.getMessage()));
      }
    }
    if (!setup.usable()) {
      log.warn("RunConfig for run {} is unusable here: {}", rc.getRunId(), setup.problem());
    }
    runs.put(rc.getRunId(), setup);
  }

  private void onAssign(Assign a, long nowNanos) {
    JobKey key = new JobKey(a.getJobId(), a.getToken());
    if (held.containsKey(key) || outbox.contains(key)) {
      log.warn("duplicate Assign for {}; ignored", key);
      return;
    }
    if (draining) {
      handBack(key, "worker is shutting down: assignment handed back");
      return;
    }
    if (coordinatorDrain) {
      handBack(key, "worker is draining: assignment handed back");
      return;
    }
    RunSetup setup = runs.get(a.getRunId());
    if (setup == null) {
      refuse(key, "no RunConfig for run " + a.getRunId());
      return;
    }
    if (!setup.usable()) {
      refuse(key, "bad RunConfig for run " + a.getRunId() + ": " + setup.problem());
      return;
    }
    int limit = settings.slots() + settings.maxQueuedAssignments();
    // The store id is the Welcome's: the one the case's job and token belong to, which the key must name.
    CaseAttempt attempt = CaseAttempt.of(storeId, a.getRunId(), a.getJobId(), a.getCaseId(), a.getAttempt(), a.getToken());
    AssignedJob job = new AssignedJob(key, attempt, a.getCaseJson().toStringUtf8(), setup, nowNanos,
        WireMapping.journal(a));
    if (held.size() >= limit || !runner.start(job)) {
      protocolViolation("Assign for job " + a.getJobId() + " overflows the " + limit
          + " attempts a worker holds (its slots and queue; more than any dispatch window)");
      return;
    }
    held.put(key, job);
  }

  /** Answers an Assign at once with a retryable failure; logged at WARN (something is misconfigured). */
  private void refuse(JobKey key, String detail) {
    log.warn("{}: {}", key, detail);
    answer(key, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, detail, 0));
  }

  /** Gives a job back unstarted ({@code HANDED_BACK}); logged at DEBUG (the drain itself is logged). */
  private void handBack(JobKey key, String detail) {
    log.debug("{}: {}", key, detail);
    answer(key, Evaluation.failed(InfraFailure.Kind.HANDED_BACK, detail, 0));
  }

  /** A result the core makes itself, without a case: into the outbox, and sent if welcomed. */
  private void answer(JobKey key, Evaluation evaluation) {
    Result r = resultFrame(key, evaluation, 0);
    outbox.addUnreserved(key, r);
    if (state == State.WELCOMED) { // else the Welcome sends it with the rest of the outbox
      send(Envelope.newBuilder().setResult(r).build());
    }
  }

  // ---------------------------------------------------------------- the response journal

  /** Which entry an answer is for: the attempt and the request digest. */
  private record JournalWait(JobKey key, String requestDigest) {}

  /** An entry's frame and the slot waiting for its answer. */
  private record PendingJournal(Envelope frame, CompletableFuture<JournalEntry.Status> answer) {}

  /**
   * A case journals a paid response ({@link dev.tally.worker.eval.ResponseJournal#record}): the entry goes
   * to the coordinator now if welcomed, else with the next Welcome (and again after every reconnect until
   * it is answered); {@code answer} completes with the coordinator's {@link JournalAck}, or exceptionally
   * (an {@link IllegalStateException} saying why) if the attempt is no longer held here or the session
   * ends first. Completed on this thread: whoever waits must not run work in its completion stages.
   */
  public void journal(JournalEntry entry, CompletableFuture<JournalEntry.Status> answer, long nowNanos) {
    JobKey key = new JobKey(entry.jobId(), entry.token());
    if (state == State.ENDED || !held.containsKey(key)) {
      answer.completeExceptionally(new IllegalStateException("the attempt " + key + " is no longer held by this worker"));
      return;
    }
    Envelope frame = Envelope.newBuilder().setJournalEntry(WireMapping.toWire(entry)).build();
    PendingJournal previous = journal.put(new JournalWait(key, entry.requestDigest()), new PendingJournal(frame, answer));
    if (previous != null) {
      previous.answer().completeExceptionally(new IllegalStateException("journalled again by the same attempt"));
    }
    if (state == State.WELCOMED) {
      send(frame);
      flush();
    }
  }

  private void onJournalAck(JournalAck ack) {
    JournalWait wait = new JournalWait(new JobKey(ack.getJobId(), ack.getToken()), ack.getRequestDigest());
    PendingJournal pending = journal.remove(wait);
    if (pending == null) {
      log.debug("JournalAck for {} ({}), which is not waited for here; ignored", wait.key(), wait.requestDigest());
      return;
    }
    pending.answer().complete(WireMapping.toCore(ack.getStatus()));
  }

  /** Fails the entries of one attempt that are still waiting (it was stopped), or of all when {@code key} is null. */
  private void dropJournal(JobKey key, String why) {
    var it = journal.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      if (key == null || e.getKey().key().equals(key)) {
        it.remove();
        e.getValue().answer().completeExceptionally(new IllegalStateException(why));
      }
    }
  }

  private void onResultAck(ResultAck ack, long nowNanos) {
    for (AckEntry e : ack.getEntriesList()) {
      JobKey key = new JobKey(e.getJobId(), e.getToken());
      outbox.remove(key);
      if (e.getStatus() == AckEntry.Status.FENCED) {
        // The case already ended (this was its result); the coordinator discarded it. Nothing to stop.
        log.debug("result for {} was fenced", key);
      }
    }
    checkDrainDone();
  }

  private void onAbandon(Abandon a, long nowNanos) {
    JobKey key = new JobKey(a.getJobId(), a.getToken());
    if (held.remove(key) != null) {
      dropJournal(key, "abandoned by the coordinator: " + a.getReason());
      runner.cancel(key, "abandoned by the coordinator: " + a.getReason());
      log.info("abandoned {}: {}", key, a.getReason());
      checkDrainDone();
    } else {
      log.debug("Abandon for {}, which is not held here; ignored", key);
    }
  }

  // ---------------------------------------------------------------- cases

  /**
   * A case the runner started ended with an evaluation, carrying the outbox room its slot reserved. Its
   * result goes into the outbox (and out, if welcomed) unless the attempt is no longer held (abandoned,
   * dropped with another store's jobs, or the session ended), in which case the room is given back. Call
   * {@link #flush} after a batch of them.
   */
  public void caseEnded(CaseEnd end, long nowNanos) {
    AssignedJob job = state == State.ENDED ? null : held.remove(end.key());
    dropJournal(end.key(), "the case ended"); // nothing is left waiting once its slot went on
    if (job == null) {
      outbox.returnRoom();
      return;
    }
    long queuedMillis = TimeUnit.NANOSECONDS.toMillis(Math.max(0, end.startedNanos() - job.assignedNanos()));
    Result r = resultFrame(end.key(), end.evaluation(), queuedMillis);
    completed++; // before it is sent, so that whoever saw the result sees the count; one writer
    outbox.addReserved(end.key(), r);
    if (state == State.WELCOMED) {
      send(Envelope.newBuilder().setResult(r).build());
    }
    checkDrainDone();
  }

  /** The Result frame of one attempt, through the protocol's one mapping. */
  private static Result resultFrame(JobKey key, Evaluation evaluation, long queuedMillis) {
    Result r = evaluation instanceof Evaluation.Failed failed
        ? WireMapping.result(key.jobId(), key.token(), failed.failure(), failed.durationMillis())
        : WireMapping.result(key.jobId(), key.token(), ((Evaluation.Finished) evaluation).outcome());
    return queuedMillis == 0 ? r : r.toBuilder().setQueuedMillis(queuedMillis).build();
  }

  // ---------------------------------------------------------------- time

  /** Time passed: sends a due heartbeat, judges the coordinator, enforces the Welcome and drain deadlines. */
  public void tick(long nowNanos) {
    long due = nextTickNanos();
    long lateNanos = due == NO_TICK ? 0 : nowNanos - due; // the driver asked to be woken at due: the rest was starvation
    if (lateNanos > worstTickLagNanos) {
      worstTickLagNanos = lateNanos;
    }
    if (state == State.AWAITING_WELCOME && nowNanos - welcomeDeadlineNanos >= 0) {
      if (lateNanos > LATE_CHECKS * LIVENESS_CHECK_PERIOD.toNanos()) {
        // This process was starved or paused (30 worker JVMs starting on 2 cores were, for over 10 s): the
        // time it did not run is not the coordinator's, and the Welcome may be unread in the socket. Judge
        // on the next tick, once read, as the liveness check does.
        log.debug("the Welcome deadline was checked {} ms late; judging on the next tick", TimeUnit.NANOSECONDS.toMillis(lateNanos));
        welcomeDeadlineNanos = nowNanos + LIVENESS_CHECK_PERIOD.toNanos();
      } else {
        closeConnection("the coordinator sent no Welcome within " + WELCOME_TIMEOUT.toSeconds() + " s of the Hello", false);
      }
    }
    if (state == State.WELCOMED && nowNanos - nextCheckNanos >= 0) {
      judgeCoordinator(nowNanos);
    }
    if (state == State.WELCOMED && nowNanos - nextHeartbeatNanos >= 0) {
      sendHeartbeat(nowNanos);
    }
    if (draining && state != State.ENDED && nowNanos - drainDeadlineNanos >= 0) {
      cutDrainShort();
    }
  }

  private void judgeCoordinator(long nowNanos) {
    long periodNanos = LIVENESS_CHECK_PERIOD.toNanos();
    long sinceLastCheck = nowNanos - lastCheckNanos;
    lastCheckNanos = nowNanos;
    nextCheckNanos = nowNanos + periodNanos;
    if (sinceLastCheck > LATE_CHECKS * periodNanos) {
      log.debug("liveness check of the coordinator ran {} ms late; judging on the next one",
          TimeUnit.NANOSECONDS.toMillis(sinceLastCheck - periodNanos));
      return;
    }
    if (coordinatorDetector.convicted(nowNanos)) {
      long silenceMillis = TimeUnit.NANOSECONDS.toMillis(nowNanos - lastFrameNanos);
      closeConnection("silent for " + silenceMillis + " ms with the connection open ("
          + coordinatorDetector.describe() + ")", false);
    }
  }

  private void sendHeartbeat(long nowNanos) {
    Heartbeat.Builder hb = Heartbeat.newBuilder().setSeq(++heartbeatSeq);
    long previous = Long.MIN_VALUE;
    // One id per job as a rule; should two tokens of one job be held at once (rare) and not be neighbours,
    // its id is listed twice, which is harmless: the coordinator reads a heartbeat as proof of life only.
    for (JobKey k : held.keySet()) {
      if (k.jobId() != previous) {
        hb.addInFlight(k.jobId());
        previous = k.jobId();
      }
    }
    hb.setSchedulingLagMillis((int) Math.min(0xFFFF_FFFFL, TimeUnit.NANOSECONDS.toMillis(worstTickLagNanos)));
    worstTickLagNanos = 0;
    send(Envelope.newBuilder().setHeartbeat(hb).build());
    flush();
    nextHeartbeatNanos += heartbeatIntervalNanos;
    if (nextHeartbeatNanos - nowNanos <= 0) {
      nextHeartbeatNanos = nowNanos + heartbeatIntervalNanos; // after a pause: no burst of catch-up beats
    }
  }

  // ---------------------------------------------------------------- drain and stop

  /**
   * Begins a graceful drain (the worker was asked to shut down, by SIGTERM or SIGINT): tells the
   * coordinator ({@code Drain}, again after every reconnect), hands back at once every job not yet
   * started ({@code HANDED_BACK}), hands back every later Assign, and lets running cases finish for up to
   * {@code timeout}, heartbeating and delivering their results meanwhile. It ends the session:
   *
   * <ul>
   *   <li>{@link Termination.Kind#DRAINED} once nothing is held and every result is acknowledged (after
   *       a Goodbye);
   *   <li>{@link Termination.Kind#DRAIN_CUT_SHORT} when the timeout passes first (running cases are
   *       stopped, their process trees killed; the coordinator releases their jobs when the connection
   *       closes, and a late result would be fenced);
   *   <li>at once when nothing is running and no coordinator is connected: a result can only be
   *       delivered to a coordinator, and a worker whose coordinator is gone ({@code tally run} ended)
   *       must not linger ({@code DRAINED} if no result was left, else {@code DRAIN_CUT_SHORT}).
   * </ul>
   *
   * A second call does nothing.
   *
   * @param timeout how long running cases may take; zero stops them at once
   */
  public void drain(long nowNanos, Duration timeout) {
    if (state == State.ENDED || draining) {
      return;
    }
    draining = true;
    drainDeadlineNanos = nowNanos + Math.min(timeout.toNanos(), Long.MAX_VALUE / 4);
    if (state == State.WELCOMED) {
      send(drainFrame());
    }
    List<JobKey> withdrawn = runner.withdrawQueued();
    for (JobKey key : withdrawn) {
      held.remove(key);
      handBack(key, "worker is shutting down: handed back before it started");
    }
    flush();
    log.info("draining: handed back {} jobs not yet started; waiting up to {} for {} running cases",
        withdrawn.size(), Reconnector.human(timeout.toNanos()), held.size());
    checkDrainDone();
  }

  private static Envelope drainFrame() {
    return Envelope.newBuilder().setDrain(Drain.newBuilder().setReason("worker shutting down")).build();
  }

  private void checkDrainDone() {
    if (!draining || state == State.ENDED || !held.isEmpty()) {
      return;
    }
    if (state == State.WELCOMED) {
      if (!outbox.isEmpty()) {
        return; // waiting for acks
      }
      send(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("worker drained")).build());
      flush();
      closeConnection("worker drained", true);
      end(Termination.Kind.DRAINED, "drained: every case finished and every result was delivered");
    } else if (state == State.DISCONNECTED) {
      endDrainWithoutCoordinator(lastLossReason);
    }
    // AWAITING_WELCOME: a coordinator is about to take the results; CLOSING: disconnected() decides.
  }

  private void endDrainWithoutCoordinator(String why) {
    int undelivered = outbox.size();
    if (undelivered == 0) {
      end(Termination.Kind.DRAINED, "drained: every case finished and every result was delivered");
    } else {
      String detail = "drained without a coordinator to deliver " + undelivered + " results to (" + why
          + "); their jobs run again";
      log.warn(detail);
      end(Termination.Kind.DRAIN_CUT_SHORT, detail);
    }
  }

  private void cutDrainShort() {
    int running = held.size();
    for (JobKey key : List.copyOf(held.keySet())) {
      runner.cancel(key, "the worker's drain timeout passed");
    }
    held.clear();
    int unacknowledged = outbox.size();
    String detail = "drain timeout passed: stopped " + running + " running cases and left " + unacknowledged
        + " results unacknowledged; their jobs run again";
    if (running == 0 && unacknowledged == 0) {
      detail = "drain timeout passed"; // a zero timeout with nothing to wait for
    }
    if (state == State.WELCOMED) {
      send(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("worker drain timed out")).build());
      flush();
      closeConnection("drain timeout", true);
    } else if (state == State.AWAITING_WELCOME) {
      closeConnection("drain timeout", false);
    }
    log.warn(detail);
    end(running == 0 && unacknowledged == 0 ? Termination.Kind.DRAINED : Termination.Kind.DRAIN_CUT_SHORT, detail);
  }

  /**
   * Stops at once: Goodbye if welcomed, every held case cancelled (not reported: the coordinator re-queues
   * their jobs when the connection closes), the connection closed, the session ended {@link
   * Termination.Kind#STOPPED}. Does nothing once ended.
   */
  public void stop(String reason) {
    if (state == State.ENDED) {
      return;
    }
    if (state == State.WELCOMED) {
      send(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason(reason)).build());
      flush();
      closeConnection(reason, true);
    } else if (state == State.AWAITING_WELCOME) {
      closeConnection(reason, false);
    }
    for (JobKey key : List.copyOf(held.keySet())) {
      runner.cancel(key, reason);
    }
    held.clear();
    end(Termination.Kind.STOPPED, reason);
  }

  private void end(Termination.Kind kind, String detail) {
    state = State.ENDED;
    dropJournal(null, "the worker's session ended: " + detail);
    welcomed = false;
    port.ended(new Termination(kind, detail));
  }

  /** The attempts held, oldest first (tests and the simulation's checks). Core thread only. */
  public List<JobKey> heldKeys() {
    return new ArrayList<>(held.keySet());
  }
}
