package dev.tally.coordinator.net;

import dev.tally.core.Assignment;
import dev.tally.core.InfraFailure;
import dev.tally.core.detect.FailureDetector;
import dev.tally.core.detect.HealthAwareDetector;
import dev.tally.core.detect.LocalHealth;
import dev.tally.core.detect.PeerLag;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.HeldLease;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.security.Secret;
import dev.tally.protocol.Drain;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Welcome;
import dev.tally.protocol.mapping.WireMapping;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The decision core of the connection actor: the state and transitions of one worker session at the
 * coordinator, with no sockets, no threads and no clock. A driver feeds it what happened (the connection
 * opened, a frame arrived at time t, a liveness or heartbeat tick at t, the superseded session ended, the
 * connection closed, an error) and it carries out what it decides through its {@link ConnectionPort}
 * (write, flush, close, pause reading...) and the {@link WorkerEvents} sink. {@code WorkerConnection}
 * drives it over a Netty channel in production; the simulation drives the same class under virtual time,
 * so that a seed runs the code that runs on a real socket (the FoundationDB and TigerBeetle way: only the
 * I/O is swapped).
 *
 * <p>Life of a session:
 *
 * <ol>
 *   <li>The first frame must be a {@code Hello}. On a port that requires a worker token, a Hello without
 *       it or with another ({@link #credentialsProblem}, constant-time) is answered with a {@code Goodbye}
 *       of code {@code UNAUTHENTICATED} and the connection closed, logged once per remote address per
 *       {@link RefusalLog#PERIOD}; nothing else it says is looked at. Then it must have a worker id and
 *       name of at most {@value
 *       #MAX_ID_CHARS} characters and 1 to {@link WorkerServer#MAX_WORKER_SLOTS} slots; anything else is
 *       answered with a {@code Goodbye} saying why, and the connection is closed. Leases the Hello says it
 *       holds from another store than this coordinator's are not claimed.
 *   <li>The session's {@link RemoteWorker} is made and registered as its worker's live session
 *       ({@link SessionRegistry}). If the worker already had one, that one is closed ("superseded by a new
 *       session") and this one <em>joins only once the superseded session has ended</em>, that is once its
 *       {@code workerLost} was reported (and, if it was itself waiting to join, once its own predecessor
 *       ended): reading is paused meanwhile, and frames that still arrive are held and handled after
 *       joining. So the scheduler sees the old session end before the new one begins.
 *   <li>Joining: a {@code Welcome}, then {@link WorkerEvents#workerJoined}. If another worker's live session
 *       goes by the same name, that is logged and said in the Welcome's notices, and the session joins all
 *       the same: names are for people, ids for the protocol.
 *   <li>{@code Result} frames become {@link WorkerEvents#attemptEnded} (one that does not map to a report
 *       is a malformed frame); {@code JournalEntry} frames become {@link WorkerEvents#responseJournalled}
 *       (one over the journal's limits is a malformed frame); {@code Heartbeat}s only prove liveness; a {@code Drain} means the worker is
 *       shutting down gracefully: its handle takes no new work for the rest of the session; a
 *       {@code Goodbye} ends the session. Anything else from a worker is refused.
 *   <li>Liveness: every frame's arrival feeds the {@link FailureDetector}, judged through a {@link
 *       HealthAwareDetector}: its silence is stretched by the port's {@link LocalHealth} multiplier and
 *       forgiven the scheduling lag the worker reports in its heartbeats ({@link PeerLag}). A check every
 *       {@link WorkerServer.Settings#reapCheckPeriod()} publishes the suspicion to the handle (at or above
 *       the drain level it gets no new jobs; crossings are logged) and closes the connection once it is
 *       convicted ("reaped after ...ms of silence (...)"). A check that comes more than {@value
 *       #LATE_CHECKS} periods after the previous one does not judge: this process was paused, not the
 *       worker, and what it sent may still be unread. Each check also tells the local health whether
 *       the worker has become silent ({@link LocalHealth#isSilent}: a couple of heartbeats missed) or was
 *       heard from again, so that many silent at once count against the observer, not against each.
 *   <li>The coordinator heartbeats too: on each heartbeat tick of a joined session, a {@code Heartbeat}
 *       goes out if nothing else was written for half an interval, so that the worker can tell a silent
 *       coordinator from an idle one.
 *   <li>On the scheduler's side, through the handle: a {@code RunConfig} once per run per session before
 *       that run's first {@code Assign}; an assignment whose frame would exceed the frame limit is not
 *       sent but reported ended with a retryable failure.
 *   <li>When the connection closes, exactly once and only if it joined, {@link WorkerEvents#workerLost}
 *       with the reason, before the worker id is released, so that no new session of the worker joins
 *       while the scheduler still counts this one as live.
 * </ol>
 *
 * <p>Time is passed in: every method that needs it takes a monotonic reading in nanoseconds (a {@link
 * dev.tally.core.Ticker}'s), and the core reads no clock. It never blocks, schedules or changes threads:
 * the handle it makes reaches it from other threads through the {@code owner} {@link Executor} the
 * driver gave it, and everything else the simulation must provide is an interface too (the port, the
 * registry, the events sink).
 *
 * <p>Thread-safety: not thread-safe. Every method is called on the session's owner thread (the channel's
 * event loop; the simulation's one thread). Other threads reach the session through its {@link
 * RemoteWorker}, which hops to that thread.
 */
public final class ConnectionCore {
  private static final Logger log = LoggerFactory.getLogger(ConnectionCore.class);

  /** The longest worker id or name accepted in Hello ({@link dev.tally.protocol.ProtocolLimits#MAX_ID_CHARS}). */
  public static final int MAX_ID_CHARS = dev.tally.protocol.ProtocolLimits.MAX_ID_CHARS;

  /**
   * How many run ids a session remembers having sent a RunConfig for. Past it the least recently used is
   * forgotten, which costs only a repeated RunConfig if that run comes back.
   */
  public static final int MAX_RUN_CONFIGS_PER_SESSION = 1_024;

  /**
   * A liveness check that comes more than this many periods after the previous one finds this process
   * was paused, and does not judge. Five periods (500 ms at the default 100 ms) is far beyond scheduling
   * noise yet well short of any detection window, so skipping one check delays a real conviction by one
   * period at most.
   */
  public static final int LATE_CHECKS = 5;

  /**
   * The most frames a session holds while it waits to join. Reading is paused meanwhile, so only frames
   * already read can still come: one read is at most 64 KiB and a frame at least 5 bytes, about 13,000
   * frames. Only a driver that ignores {@link ConnectionPort#pauseReading} gets here, and the session is
   * then refused rather than holding without bound.
   */
  public static final int MAX_FRAMES_HELD_WHILE_JOINING = 16_384;

  /** How much of a peer's Goodbye or Drain reason goes into our logs and lost reasons. */
  static final int MAX_QUOTED_REASON_CHARS = 200;

  /** Where a session is in its life. */
  public enum Phase {
    /** Connected; no acceptable Hello yet. */
    AWAITING_HELLO,
    /** Hello accepted; waiting for the session it superseded to end. Frames are held. */
    JOINING,
    /** Welcomed and reported joined. */
    JOINED,
    /** Closing or closed: frames are ignored, nothing is sent. */
    CLOSED
  }

  /** What went wrong beneath the core, as the driver classifies it. */
  public enum ErrorKind {
    /** The bytes were not a frame, or the frame not an Envelope: refused with a Goodbye. */
    MALFORMED_FRAME,
    /** A frame of ours could not be encoded or sent (too large, say): closed with a Goodbye. */
    CANNOT_SEND,
    /** The connection failed (reset by the peer...): closed without a Goodbye, which could not arrive. */
    IO_ERROR,
    /** A bug on our side: logged with its stack trace, and the connection closed. */
    INTERNAL
  }

  /**
   * What every session of one worker port shares.
   *
   * @param settings heartbeat interval, detector, frame limit, prefetch, epoch, ticker (the ticker only for
   *     the handle's writes: the core itself is handed its times)
   * @param storeId the identity of the coordinator's store, sent in Welcome; empty for none
   * @param events where sessions are reported; called on the owner thread, must not block
   * @param sessions the live session of each worker id, shared by all sessions of the port
   * @param refusals how often refusals of one address are logged, shared by all sessions of the port
   * @param health the observer's health, shared by all sessions of the port: it stretches their detectors,
   *     and they report joins, ends and silence to it; its driver ticks it
   */
  public record Context(WorkerServer.Settings settings, String storeId, WorkerEvents events, SessionRegistry sessions,
      RefusalLog refusals, LocalHealth health) {
    /** @throws NullPointerException if any component is null */
    public Context {
      Objects.requireNonNull(settings, "settings");
      Objects.requireNonNull(storeId, "storeId");
      Objects.requireNonNull(events, "events");
      Objects.requireNonNull(sessions, "sessions");
      Objects.requireNonNull(refusals, "refusals");
      Objects.requireNonNull(health, "health");
    }

    /**
     * A context with a refusal log of its own ({@link RefusalLog#PERIOD}) and a local health of its own
     * under the settings' rule ({@link WorkerServer.Settings#localHealth()}); unless someone ticks it, only
     * the workers' reported lag applies.
     */
    public Context(WorkerServer.Settings settings, String storeId, WorkerEvents events, SessionRegistry sessions) {
      this(settings, storeId, events, sessions, new RefusalLog(), new LocalHealth(settings.localHealth()));
    }
  }

  private final WorkerServer.Settings settings;
  private final String storeId;
  private final WorkerEvents events;
  private final SessionRegistry sessions;
  private final RefusalLog refusals;
  private final LocalHealth health;
  private final ConnectionPort port;
  private final Executor owner;
  private final String peer;
  private final String sessionId;
  private final PlantedConnectionFault planted;
  private final long reapCheckPeriodNanos;
  private final long heartbeatIntervalNanos;
  /** When {@link #onSweep} next gives the heartbeat tick (one interval after the last one was due). */
  private long nextHeartbeatTickNanos;

  /**
   * Completes once the connection closed, workerLost (if due) was reported and this session's predecessor
   * (if any) has ended too, so that a session superseding this one, while this one still waited to join,
   * never joins before the first one's loss is reported. Read by successors on other threads.
   */
  private final CompletableFuture<Void> ended = new CompletableFuture<>();
  /** The superseded session's {@link #ended}, or a completed future if this one superseded none. */
  private CompletableFuture<Void> predecessorEnded = CompletableFuture.completedFuture(null);
  /** The session this one superseded, if any: it stays the worker's live session until this one joins. */
  private RemoteWorker predecessor;
  /** Frames that arrived while waiting for a superseded session to end; handled on joining. */
  private final ArrayDeque<Envelope> heldWhileJoining = new ArrayDeque<>();
  private final Map<Long, Boolean> runsConfigured = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
      return size() > MAX_RUN_CONFIGS_PER_SESSION;
    }
  };

  private Phase phase = Phase.AWAITING_HELLO;
  private HealthAwareDetector detector;
  private boolean drainingLogged;
  /**
   * Whether this session counts in the local health: from its joining on. A connection that has not said
   * an accepted Hello has proven nothing (anyone who reaches the port can open one and stay silent: 150 of
   * them stretched every conviction ninefold), and holds no job whose worker a false reap would cost.
   */
  private boolean inHealth;
  /** Whether this connection last told the local health it is silent. */
  private boolean silentReported;
  private long lastFrameNanos;
  private long lastCheckNanos;
  /** When a frame was last written to the worker: a heartbeat goes out only after a quiet half interval. */
  private long lastWriteNanos;
  private long heartbeatSeq;
  private Hello hello;
  private String closeReason;
  private String workerId;
  private RemoteWorker handle;
  private boolean readingPaused;
  private boolean joined;
  private boolean lostReported;
  private boolean inactive;

  /**
   * A session of a connection that has just been accepted; {@link #onActive} starts it.
   *
   * @param context what all sessions of the worker port share
   * @param port carries out the core's decisions on this connection
   * @param owner runs a task on this session's owner thread (now if already on it); the handle uses it to
   *     reach the core from the scheduler's thread. It must drop, not throw, a task it can no longer run
   *     (the thread has shut down: the session's end has been reported by then)
   * @param peer the peer's address, for logs
   * @param sessionId the id this session is welcomed with (a random UUID in production; drawn from the seed
   *     in a simulation, so that a history replays exactly)
   * @param planted a bug to plant on purpose ({@link PlantedConnectionFault#NONE} in production)
   * @throws NullPointerException if any argument is null
   */
  public ConnectionCore(Context context, ConnectionPort port, Executor owner, String peer, String sessionId,
      PlantedConnectionFault planted) {
    Objects.requireNonNull(context, "context");
    this.settings = context.settings();
    this.storeId = context.storeId();
    this.events = context.events();
    this.sessions = context.sessions();
    this.refusals = context.refusals();
    this.health = context.health();
    this.port = Objects.requireNonNull(port, "port");
    this.owner = Objects.requireNonNull(owner, "owner");
    this.peer = Objects.requireNonNull(peer, "peer");
    this.sessionId = Objects.requireNonNull(sessionId, "sessionId");
    this.planted = Objects.requireNonNull(planted, "planted");
    this.reapCheckPeriodNanos = settings.reapCheckPeriod().toNanos();
    this.heartbeatIntervalNanos = settings.heartbeatInterval().toNanos();
  }

  // ---- inbound: what the driver tells the core ----

  /**
   * The connection is open, at {@code nowNanos}: the failure detector starts, the first heartbeat tick falls
   * due one heartbeat interval on, and the driver starts calling {@link #onSweep} every {@link
   * WorkerServer.Settings#reapCheckPeriod()}.
   *
   * @throws IllegalStateException if called twice
   */
  public void onActive(long nowNanos) {
    if (detector != null) {
      throw new IllegalStateException("onActive called twice for the connection from " + peer);
    }
    detector = new HealthAwareDetector(settings.detectorFactory().apply(nowNanos), health,
        new PeerLag(health.config().peerLag()), nowNanos);
    lastFrameNanos = nowNanos;
    lastCheckNanos = nowNanos;
    nextHeartbeatTickNanos = nowNanos + heartbeatIntervalNanos;
    log.debug("connection from {}", peer);
  }

  /**
   * A frame from the worker arrived at {@code nowNanos}. Every frame, also one a closed session ignores,
   * is evidence of life for the detector.
   *
   * @throws IllegalStateException if {@link #onActive} was not called first
   */
  public void onFrame(Envelope frame, long nowNanos) {
    requireActive();
    detector.heartbeat(nowNanos);
    lastFrameNanos = nowNanos;
    switch (phase) {
      case CLOSED -> {
        if (planted == PlantedConnectionFault.ACCEPT_RESULT_FROM_SUPERSEDED_SESSION && handle != null
            && frame.getBodyCase() == Envelope.BodyCase.RESULT) {
          onResult(frame); // the planted bug: a closed session's results still reach the scheduler
        }
        // Otherwise already on its way out: nothing it says changes that.
      }
      case JOINING -> hold(frame);
      default -> handle(frame, nowNanos);
    }
  }

  /**
   * The superseded session has ended (see {@link ConnectionPort#awaitPredecessor}), at {@code nowNanos}:
   * this session joins, unless it closed meanwhile.
   */
  public void onPredecessorEnded(long nowNanos) {
    join(nowNanos);
  }

  /**
   * The driver's one periodic call, every {@link WorkerServer.Settings#reapCheckPeriod()} at {@code
   * nowNanos}: the {@link #onLivenessCheck liveness check}, then the {@link #onHeartbeatTick heartbeat tick}
   * if one is due. Ticks fall due every heartbeat interval from {@link #onActive}; each is given by the first
   * sweep at or after its time, so at most one period late, and once however late the sweep is (a paused
   * process does not send a burst of them). A driver calls either this or the two checks on timers of their
   * own, not both.
   *
   * @throws IllegalStateException if {@link #onActive} was not called first
   */
  public void onSweep(long nowNanos) {
    onLivenessCheck(nowNanos);
    if (nowNanos - nextHeartbeatTickNanos >= 0) {
      nextHeartbeatTickNanos += heartbeatIntervalNanos;
      if (nowNanos - nextHeartbeatTickNanos >= 0) {
        nextHeartbeatTickNanos = nowNanos + heartbeatIntervalNanos;
      }
      onHeartbeatTick(nowNanos);
    }
  }

  /**
   * The periodic liveness check, at {@code nowNanos}: publishes the suspicion to the handle (a worker at or
   * above the drain level gets no new jobs), logs when it crosses the drain level either way, and closes
   * the connection once the detector convicts it. A session that never says Hello is reaped the same way.
   *
   * @throws IllegalStateException if {@link #onActive} was not called first
   */
  public void onLivenessCheck(long nowNanos) {
    requireActive();
    if (phase == Phase.CLOSED) {
      return;
    }
    long sinceLastCheck = nowNanos - lastCheckNanos;
    lastCheckNanos = nowNanos;
    if (sinceLastCheck > LATE_CHECKS * reapCheckPeriodNanos) {
      // This process was paused (a GC pause, SIGSTOP, a starved VM): the silence is ours, not the
      // worker's, and what it sent meanwhile may still be unread in the socket (after a long stop the
      // event loop can run its overdue tasks before its reads). Judge on the next check, once read.
      log.debug("liveness check of {} ran {} ms late; judging on the next one", workerId,
          TimeUnit.NANOSECONDS.toMillis(sinceLastCheck - reapCheckPeriodNanos));
      return;
    }
    boolean silent = inHealth && health.isSilent(nowNanos - lastFrameNanos, heartbeatIntervalNanos);
    if (silent != silentReported) {
      silentReported = silent;
      health.silenceChanged(silent);
    }
    double level = detector.suspicion(nowNanos);
    boolean draining = detector.draining(nowNanos);
    if (handle != null) {
      handle.suspicion(draining, level, detector.convictionLevel());
      if (draining != drainingLogged) {
        drainingLogged = draining;
        if (draining) {
          log.warn("worker {} ({}) is suspected: suspicion {} at or above the drain level {} ({}); no new jobs until it is heard from",
              workerId, handle.name(), String.format(Locale.ROOT, "%.2f", level), detector.drainLevel(),
              detector.describe(nowNanos));
        } else {
          log.warn("worker {} ({}) is heard from again (suspicion {}); it takes new jobs", workerId, handle.name(),
              String.format(Locale.ROOT, "%.2f", level));
        }
      }
    }
    if (!detector.convicted(nowNanos)) {
      return;
    }
    long silenceMillis = TimeUnit.NANOSECONDS.toMillis(nowNanos - lastFrameNanos);
    String reason = "reaped after " + silenceMillis + "ms of silence (" + detector.describe(nowNanos) + ")";
    log.warn("{} at {}: {}", workerId != null ? workerId : "unidentified peer", peer, reason);
    closeWith(reason);
  }

  /**
   * The heartbeat tick, every heartbeat interval, at {@code nowNanos}: a joined session sends a {@code
   * Heartbeat} unless a frame went out within the last half interval, so that a worker hears from its
   * coordinator at least every 1.5 intervals (plus one sweep period, under {@link #onSweep}) while the link
   * lives and can judge it with a failure detector of its own (a coordinator whose host died or whose
   * network path dropped, without the socket closing, goes silent). Busy sessions carry assignments and
   * acks instead, at no extra cost. Before joining and after closing the tick does nothing.
   */
  public void onHeartbeatTick(long nowNanos) {
    if (!open() || nowNanos - lastWriteNanos < heartbeatIntervalNanos / 2) {
      return;
    }
    send(Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(++heartbeatSeq)).build(), nowNanos);
  }

  /**
   * Something failed beneath the core: the connection is closed with a reason made of {@code kind} and
   * {@code cause}'s message ("malformed frame: ...", "cannot send: ...", "I/O error: ...", "internal
   * error: ..."). After the session closed, it is only logged at debug level.
   */
  public void onError(ErrorKind kind, Throwable cause) {
    if (phase == Phase.CLOSED) {
      log.debug("{} after close: {}", peer, cause.toString());
      return;
    }
    switch (kind) {
      case MALFORMED_FRAME -> refuse("malformed frame: " + cause.getMessage());
      case CANNOT_SEND -> refuse("cannot send: " + cause.getMessage());
      case IO_ERROR -> {
        log.info("{} ({}): I/O error: {}", workerId, peer, cause.getMessage());
        closeWithoutGoodbye("I/O error: " + cause.getMessage());
      }
      case INTERNAL -> {
        log.error("{} ({}): internal error; closing the connection", workerId, peer, cause);
        closeWith("internal error: " + cause);
      }
    }
  }

  /**
   * The connection has closed, whoever closed it. If the session joined, its {@link
   * WorkerEvents#workerLost} is reported now (once), with the reason the core closed it for, else
   * "coordinator shutting down" or "closed by peer"; then its worker id is released. Later calls do
   * nothing.
   *
   * @param coordinatorClosing whether the worker port is shutting down (it closed the connection)
   */
  public void onInactive(boolean coordinatorClosing) {
    if (inactive) {
      return;
    }
    inactive = true;
    phase = Phase.CLOSED;
    if (inHealth) {
      health.sessionClosed(silentReported);
      inHealth = false;
      silentReported = false;
    }
    heldWhileJoining.clear();
    String reason = closeReason != null ? closeReason : coordinatorClosing ? "coordinator shutting down" : "closed by peer";
    // Lost is reported before the worker id is released, so that no new session of this worker can
    // join while the scheduler still counts this one as live.
    boolean forget = planted == PlantedConnectionFault.REAP_WITHOUT_LOSS && reason.startsWith("reaped");
    if (joined && !lostReported && !forget) { // forget: the planted bug loses a reaped session's loss
      lostReported = true;
      log.info("worker {} at {} lost: {}", workerId, peer, reason);
      try {
        events.workerLost(handle, reason);
      } catch (RuntimeException e) {
        log.error("the events sink failed on workerLost for {}", workerId, e);
      }
    } else {
      log.debug("connection from {} closed before joining: {}", peer, reason);
    }
    if (handle != null) {
      if (!joined && predecessor != null && !predecessor.ended().isDone()) {
        // This session never joined: the one it superseded is still the worker's live session until it
        // has ended, so a third session must wait for it too (found by the superseding fuzz property).
        sessions.restore(workerId, handle, predecessor);
      } else {
        sessions.unregister(workerId, handle);
      }
    }
    predecessorEnded.whenComplete((ignored, error) -> ended.complete(null));
  }

  // ---- outbound: what the scheduler asks, through the handle, on the owner thread ----

  /**
   * Closes the session, first sending a best-effort {@code Goodbye} with the reason; its {@code workerLost}
   * follows with that reason. The close does not wait for the Goodbye to be written, so a peer that does
   * not read cannot hold the connection open. Does nothing once closing.
   */
  public void close(String reason) {
    closeWith(reason);
  }

  /**
   * Writes a RunConfig for each run not yet configured on this session, then each assignment's Assign
   * frame, and flushes once. An assignment whose frame would exceed the frame limit is not sent: it is
   * reported ended with a retryable failure saying so, since the worker would refuse it and close.
   * Dropped if the session is not open.
   *
   * @param assignments the assignments, in order
   * @param frames the Assign frame of each assignment, same order (built on the caller's thread)
   */
  void writeAssignments(List<Assignment> assignments, List<Envelope> frames, long nowNanos) {
    if (!open()) {
      log.debug("dropped {} assignments for {}: session closed", assignments.size(), workerId);
      return;
    }
    for (int i = 0; i < assignments.size() && phase == Phase.JOINED; i++) {
      Assignment a = assignments.get(i);
      Envelope frame = frames.get(i);
      int size = frame.getSerializedSize();
      if (size > settings.maxFrameBytes()) {
        String detail = "case " + dev.tally.core.cases.CaseLines.quotedId(a.caseId()) + " is " + size + " bytes on the wire, above the frame limit of "
            + settings.maxFrameBytes() + " bytes";
        log.warn("job {}: {}; not sent to {}", a.jobId(), detail, workerId);
        events.attemptEnded(handle, AttemptReport.failed(a.jobId(), a.token(),
            new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, detail)));
        continue;
      }
      if (runsConfigured.put(a.runId(), Boolean.TRUE) == null) {
        port.write(Envelope.newBuilder().setRunConfig(WireMapping.runConfig(a.runId(), a.evaluator())).build());
      }
      port.write(frame);
    }
    port.flush();
    lastWriteNanos = nowNanos;
  }

  /** Writes one frame and flushes, if the session is open; else drops it. */
  void send(Envelope frame, long nowNanos) {
    if (open()) {
      port.write(frame);
      port.flush();
      lastWriteNanos = nowNanos;
    } else {
      log.debug("dropped a {} for {}: session closed", frame.getBodyCase(), workerId);
    }
  }

  /** Writes the frames and flushes once, if the session is open; else drops them. */
  void sendAll(List<Envelope> frames, long nowNanos) {
    if (!open()) {
      log.debug("dropped {} frames for {}: session closed", frames.size(), workerId);
      return;
    }
    frames.forEach(port::write);
    port.flush();
    lastWriteNanos = nowNanos;
  }

  // ---- what others may read ----

  /** Where the session is in its life. */
  public Phase phase() {
    return phase;
  }

  /** The session's handle once its Hello was accepted (it may not have joined yet), else null. */
  public RemoteWorker handle() {
    return handle;
  }

  /** The peer's address, as given, for logs. */
  public String peer() {
    return peer;
  }

  /** See {@link #ended}; completed on the owner thread, read from any. */
  CompletableFuture<Void> ended() {
    return ended;
  }

  // ---- the decisions ----

  private void handle(Envelope envelope, long nowNanos) {
    Envelope.BodyCase body = envelope.getBodyCase();
    if (phase == Phase.AWAITING_HELLO) {
      if (body == Envelope.BodyCase.HELLO) {
        onHello(envelope.getHello(), nowNanos);
      } else {
        refuse("first frame must be Hello, got " + body);
      }
      return;
    }
    switch (body) {
      case HEARTBEAT -> { // its arrival was the point; a starved worker also says how starved
        int lagMillis = envelope.getHeartbeat().getSchedulingLagMillis();
        if (lagMillis != 0) {
          detector.lagReported(nowNanos, TimeUnit.MILLISECONDS.toNanos(Integer.toUnsignedLong(lagMillis)));
        }
      }
      case RESULT -> onResult(envelope);
      case JOURNAL_ENTRY -> onJournalEntry(envelope);
      case DRAIN -> onWorkerDrain(envelope.getDrain());
      case GOODBYE -> {
        String reason = "worker said goodbye: " + clip(envelope.getGoodbye().getReason());
        log.info("{} ({}): {}", workerId, peer, reason);
        closeWithoutGoodbye(reason);
      }
      case HELLO -> refuse("second Hello on a live session");
      default -> refuse("unexpected " + body + " from a worker");
    }
  }

  private void onHello(Hello hello, long nowNanos) {
    String unauthenticated = credentialsProblem(settings.workerToken(), hello);
    if (unauthenticated != null && planted != PlantedConnectionFault.ACCEPT_ANY_TOKEN) { // planted: no check
      refuseUnauthenticated(hello, unauthenticated, nowNanos);
      return;
    }
    String problem = helloProblem(hello);
    if (problem != null) {
      refuse("Hello refused: " + problem);
      return;
    }
    this.hello = hello;
    workerId = hello.getWorkerId();
    List<HeldLease> held = hello.getHeldList().stream().map(h -> new HeldLease(h.getJobId(), h.getToken())).toList();
    if (!held.isEmpty() && !hello.getStoreId().equals(storeId)) {
      // Job ids and tokens are only unique within one store: these would match unrelated jobs here. The
      // Welcome's store id makes the worker drop them; their own store re-runs them.
      log.warn("worker {} ({}) holds {} jobs of store '{}', not of this coordinator's store '{}'; they are not claimed",
          workerId, hello.getName(), held.size(), hello.getStoreId(), storeId);
      held = List.of();
    }
    handle = new RemoteWorker(this, owner, settings.ticker(), workerId, hello.getName(), hello.getSlots(),
        settings.dispatchWindow(hello.getSlots()), held);
    phase = Phase.JOINING;
    RemoteWorker previous = sessions.register(workerId, handle);
    if (previous == null) {
      join(nowNanos);
      return;
    }
    if (planted == PlantedConnectionFault.JOIN_BEFORE_PREDECESSOR_LOST) {
      join(nowNanos); // the planted bug: joins while the superseded session is still live
      previous.supersede();
      return;
    }
    // Pause reading so that what the new session says waits (bounded by one read) until the old one is
    // reported lost; the driver calls onPredecessorEnded then.
    port.pauseReading();
    readingPaused = true;
    log.info("{} ({}) supersedes its session at {}", workerId, peer, previous.peer());
    predecessor = previous;
    predecessorEnded = previous.ended();
    previous.supersede();
    port.awaitPredecessor(predecessorEnded);
  }

  /**
   * Why {@code hello} may not open a session on a port that requires {@code token}, or null if it may (or
   * the port requires none). The comparison is {@link Secret#matches}'s: constant time, the one place a
   * token is compared. The reason is for the worker's Goodbye and the log: it never quotes either token.
   */
  static String credentialsProblem(Secret token, Hello hello) {
    if (token == null) {
      return null;
    }
    if (hello.getCredentials().isEmpty()) {
      return "this coordinator requires a worker token, and the Hello carried none (give tally worker --token-file"
          + " FILE, or set " + Secret.WORKER_TOKEN_VARIABLE + ")";
    }
    return token.matches(hello.getCredentials()) ? null : "wrong worker token";
  }

  /** Why {@code hello} is refused, or null if it is acceptable. */
  static String helloProblem(Hello hello) {
    if (hello.getWorkerId().isEmpty()) {
      return "worker_id is empty";
    }
    if (hello.getWorkerId().length() > MAX_ID_CHARS || hello.getName().length() > MAX_ID_CHARS) {
      return "worker_id and name must be at most " + MAX_ID_CHARS + " characters";
    }
    // Both are printed (tally status, logs, the dashboard): no escape sequence, no look-alike.
    String hidden = dev.tally.core.HiddenCharacters.problem(hello.getWorkerId()).map(p -> "worker_id " + p)
        .or(() -> dev.tally.core.HiddenCharacters.problem(hello.getName()).map(p -> "name " + p)).orElse(null);
    if (hidden != null) {
      return hidden;
    }
    int slots = hello.getSlots(); // uint32: above 2^31-1 reads negative, and is refused with the rest
    if (slots < 1 || slots > WorkerServer.MAX_WORKER_SLOTS) {
      return "slots must be between 1 and " + WorkerServer.MAX_WORKER_SLOTS + ", got " + Integer.toUnsignedString(slots);
    }
    return null;
  }

  private void hold(Envelope frame) {
    if (heldWhileJoining.size() >= MAX_FRAMES_HELD_WHILE_JOINING) {
      refuse("more than " + MAX_FRAMES_HELD_WHILE_JOINING + " frames before its Welcome");
      return;
    }
    heldWhileJoining.add(frame);
  }

  private void join(long nowNanos) {
    if (phase != Phase.JOINING) {
      return; // closed while waiting for the superseded session
    }
    Welcome.Builder welcome = Welcome.newBuilder()
        .setSessionId(sessionId)
        .setHeartbeatIntervalMillis((int) settings.heartbeatInterval().toMillis())
        .setCoordinatorEpoch(settings.coordinatorEpoch())
        .setStoreId(storeId);
    String nameTaken = nameTaken();
    if (nameTaken != null) {
      welcome.addNotices(nameTaken);
    }
    port.write(Envelope.newBuilder().setWelcome(welcome).build());
    port.flush();
    if (phase != Phase.JOINING) {
      return; // the Welcome could not be sent, and the connection was refused
    }
    phase = Phase.JOINED;
    joined = true;
    health.sessionOpened();
    inHealth = true;
    lastWriteNanos = nowNanos;
    log.info("worker {} ({}) joined from {}: {} slots, version {}, session {}", workerId, hello.getName(),
        peer, hello.getSlots(), hello.getVersion(), sessionId);
    events.workerJoined(handle);
    for (Envelope held; phase == Phase.JOINED && (held = heldWhileJoining.poll()) != null; ) {
      handle(held, nowNanos);
    }
    heldWhileJoining.clear();
    if (readingPaused) {
      readingPaused = false;
      port.resumeReading();
    }
  }

  /**
   * If another worker's live session goes by this one's name, says so in this coordinator's log (once per
   * joining session) and returns the same sentence for the joining worker's Welcome; else null. Two
   * workers under one name are accepted, as the protocol tells them apart by id, but the results' {@code
   * worker} field and {@code tally status} (one line per name) would merge them.
   */
  private String nameTaken() {
    List<RemoteWorker> namesakes = sessions.namesakes(workerId, hello.getName());
    if (namesakes.isEmpty()) {
      return null;
    }
    RemoteWorker first = namesakes.get(0);
    log.warn("worker {} at {} joins under the name '{}', which worker {} at {} already uses: results and tally status"
        + " will not tell them apart; give each worker a name of its own (tally worker --name)",
        workerId, peer, hello.getName(), first.workerId(), first.peer());
    return "another worker connected to this coordinator (at " + first.peer() + ") already goes by the name '"
        + hello.getName() + "': results and tally status will not tell the two apart; give each worker a name of"
        + " its own (tally worker --name)";
  }

  private void onResult(Envelope envelope) {
    AttemptReport report;
    try {
      report = WireMapping.toReport(envelope.getResult());
    } catch (IllegalArgumentException e) {
      refuse("malformed frame: " + e.getMessage());
      return;
    }
    events.attemptEnded(handle, report);
  }

  private void onJournalEntry(Envelope envelope) {
    dev.tally.core.JournalEntry entry;
    try {
      entry = WireMapping.toCore(envelope.getJournalEntry());
    } catch (IllegalArgumentException e) {
      refuse("malformed frame: " + e.getMessage());
      return;
    }
    events.responseJournalled(handle, entry);
  }

  private void onWorkerDrain(Drain drain) {
    if (!handle.markWorkerDraining()) {
      return; // said before: logged once
    }
    log.info("worker {} ({}) is draining: {}; it gets no new jobs for the rest of this session", workerId,
        handle.name(), clip(drain.getReason()));
  }

  // ---- closing ----

  /**
   * Refuses a Hello without the right token: a Goodbye of code {@code UNAUTHENTICATED} (the worker stops
   * instead of retrying) and a close, before anything else the peer says is read. Logged at most once per
   * remote address per {@link RefusalLog#PERIOD}: a misconfigured worker under a supervisor that restarts
   * it, or a scanner, must not flood the log. Of what the peer sent only its claimed id and name are
   * logged (clipped): they help find the machine, and are not secret.
   */
  private void refuseUnauthenticated(Hello hello, String reason, long nowNanos) {
    long leftOut = refusals.shouldLog(RefusalLog.addressOf(peer), nowNanos);
    if (leftOut >= 0) {
      log.warn("refused a worker at {} (worker id '{}', name '{}'): {}{}", peer, clip(hello.getWorkerId()),
          clip(hello.getName()), reason, RefusalLog.leftOut(leftOut));
    }
    closeWith("Hello refused: " + reason, Goodbye.Code.UNAUTHENTICATED);
  }

  /** Logs a refusal with the peer's address, tells the peer why, and closes. */
  private void refuse(String reason) {
    log.warn("{} at {}: {}; closing", workerId != null ? workerId : "unidentified peer", peer, reason);
    closeWith(reason);
  }

  private void closeWith(String reason) {
    closeWith(reason, Goodbye.Code.CODE_UNSPECIFIED);
  }

  private void closeWith(String reason, Goodbye.Code code) {
    if (phase == Phase.CLOSED) {
      return;
    }
    // CLOSED first: if the Goodbye itself cannot be sent (say, it is larger than the frame limit), the
    // failure comes straight back through onError, which must find the connection closing instead of
    // refusing it again with another Goodbye, without end.
    phase = Phase.CLOSED;
    closeReason = reason;
    if (port.isOpen()) {
      port.write(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason(reason).setCode(code)).build());
      port.flush();
    }
    port.close();
  }

  private void closeWithoutGoodbye(String reason) {
    if (phase == Phase.CLOSED) {
      return;
    }
    phase = Phase.CLOSED;
    closeReason = reason;
    port.close();
  }

  /** Whether frames sent now can still reach the worker. */
  private boolean open() {
    return phase == Phase.JOINED && port.isOpen();
  }

  private void requireActive() {
    if (detector == null) {
      throw new IllegalStateException("the connection from " + peer + " is not active yet: call onActive first");
    }
  }

  private static String clip(String s) {
    return s.length() <= MAX_QUOTED_REASON_CHARS ? s : s.substring(0, MAX_QUOTED_REASON_CHARS) + "...";
  }
}
