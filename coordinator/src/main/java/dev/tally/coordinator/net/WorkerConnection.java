package dev.tally.coordinator.net;

import dev.tally.core.Assignment;
import dev.tally.core.InfraFailure;
import dev.tally.core.Ticker;
import dev.tally.core.detect.FailureDetector;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.HeldLease;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.mapping.WireMapping;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Welcome;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.EncoderException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection actor: one per worker socket, it turns the socket's frames into {@link WorkerEvents} and
 * the scheduler's calls on its {@link RemoteWorker} into frames.
 *
 * <p>Life of a connection:
 *
 * <ol>
 *   <li>The first frame must be a {@code Hello} with a worker id and at least one slot; anything else is
 *       answered with a {@code Goodbye} saying why, and the connection is closed.
 *   <li>If the worker id already has a live connection, that one is closed ("superseded by a new
 *       session") and this one waits until its {@code workerLost} has been reported (reading is paused
 *       meanwhile), so that the scheduler sees the old session end before the new one begins.
 *   <li>The coordinator answers {@code Welcome}, makes the session's {@link RemoteWorker} and reports
 *       {@link WorkerEvents#workerJoined}.
 *   <li>{@code Result} frames become {@link WorkerEvents#attemptEnded}; {@code Heartbeat}s only prove
 *       liveness; a {@code Goodbye} ends the session. The coordinator heartbeats too, at the interval
 *       its Welcome gave, whenever it has had nothing else to send for half an interval, so that the
 *       worker can tell a silent coordinator from an idle one.
 *   <li>It ends on a clean close by either side, a malformed frame or unexpected message (logged with the
 *       peer's address and closed), or silence: every frame's arrival feeds the {@link FailureDetector},
 *       and a check every {@code min(window / 10, 100 ms)} closes the connection once it is convicted. A
 *       check that runs late (this process itself was paused) does not judge: the silence was the
 *       coordinator's, and the worker's frames may still be unread.
 *   <li>On the socket's close, exactly once and only if it joined: {@link WorkerEvents#workerLost} with
 *       the reason ("closed by peer", "reaped after 5012ms of silence (...)", "malformed frame: ...",
 *       "superseded by a new session", ...).
 * </ol>
 *
 * <p>Thread-safety: all of a connection's state is touched only on its channel's event loop, so it holds
 * no locks. Other threads reach it only through {@link #onLoop}, which hops there.
 */
final class WorkerConnection extends ChannelInboundHandlerAdapter {
  private static final Logger log = LoggerFactory.getLogger(WorkerConnection.class);

  /** The longest worker id or name accepted in Hello: ids are UUIDs and names host names. */
  static final int MAX_ID_CHARS = 256;

  /**
   * How many run ids a session remembers having sent a RunConfig for. Past it the least recently used is
   * forgotten, which costs only a repeated RunConfig if that run comes back.
   */
  static final int MAX_RUN_CONFIGS_PER_SESSION = 1_024;

  /** How much of a peer's Goodbye reason goes into our logs and lost reasons. */
  private static final int MAX_QUOTED_REASON_CHARS = 200;

  private enum State { AWAITING_HELLO, JOINING, JOINED, CLOSED }

  private final WorkerServer server;
  private final WorkerServer.Settings settings;
  private final WorkerEvents events;
  private final Ticker ticker;
  private final Channel channel;
  /** Completes on the event loop once the socket closed and workerLost (if due) was reported. */
  private final CompletableFuture<Void> ended = new CompletableFuture<>();
  /**
   * The superseded session's {@link #ended}, if this one superseded another. This connection's own end
   * waits for it too, so that a third session superseding this one, while this one still waits to join,
   * never joins before the first session's loss is reported.
   */
  private CompletableFuture<Void> predecessorEnded = CompletableFuture.completedFuture(null);
  /** The session this one superseded, if any: it stays the worker's live session until this one joins. */
  private WorkerConnection predecessor;
  /** Frames that arrived while waiting for a superseded session to end; replayed on joining. */
  private final ArrayDeque<Envelope> heldWhileJoining = new ArrayDeque<>();
  private final Map<Long, Boolean> runsConfigured = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
      return size() > MAX_RUN_CONFIGS_PER_SESSION;
    }
  };

  private State state = State.AWAITING_HELLO;
  private FailureDetector detector;
  private boolean drainingLogged;
  private long lastFrameNanos;
  private ScheduledFuture<?> reaper;
  /** Sends this side's heartbeats once the session joined (see {@link #heartbeatIfIdle}). */
  private ScheduledFuture<?> heartbeats;
  /** When a frame was last written to the worker: a heartbeat goes out only after a quiet half interval. */
  private long lastWriteNanos;
  private long heartbeatSeq;
  /**
   * A liveness check that comes more than this many periods after the previous one finds this process
   * was paused, and does not judge (see {@link #checkLiveness}). Five periods (500 ms at the default
   * 100 ms) is far beyond scheduling noise yet well short of any detection window, so skipping one
   * check delays a real conviction by one period at most.
   */
  static final int LATE_CHECKS = 5;
  private long reapCheckPeriodNanos;
  private long lastCheckNanos;
  private String closeReason;
  private String workerId;
  private RemoteWorker handle;
  private boolean joined;
  private boolean lostReported;

  WorkerConnection(WorkerServer server, Channel channel) {
    this.server = server;
    this.settings = server.settings();
    this.events = server.events();
    this.ticker = settings.ticker();
    this.channel = channel;
  }

  // ---- inbound ----

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    long now = ticker.nanos();
    detector = settings.detectorFactory().apply(now);
    lastFrameNanos = now;
    lastCheckNanos = now;
    reapCheckPeriodNanos = settings.reapCheckPeriod().toNanos();
    reaper = ctx.executor().scheduleAtFixedRate(
        this::checkLiveness, reapCheckPeriodNanos, reapCheckPeriodNanos, TimeUnit.NANOSECONDS);
    log.debug("connection from {}", channel.remoteAddress());
    ctx.fireChannelActive();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Envelope envelope = (Envelope) msg; // the frame codec before us yields only Envelopes
    long now = ticker.nanos();
    detector.heartbeat(now);
    lastFrameNanos = now;
    switch (state) {
      case CLOSED -> { } // already on its way out: nothing it says changes that
      case JOINING -> heldWhileJoining.add(envelope);
      default -> handle(envelope);
    }
  }

  private void handle(Envelope envelope) {
    Envelope.BodyCase body = envelope.getBodyCase();
    if (state == State.AWAITING_HELLO) {
      if (body == Envelope.BodyCase.HELLO) {
        onHello(envelope.getHello());
      } else {
        refuse("first frame must be Hello, got " + body);
      }
      return;
    }
    switch (body) {
      case HEARTBEAT -> { } // its arrival was the point
      case RESULT -> onResult(envelope);
      case GOODBYE -> {
        String reason = "worker said goodbye: " + clip(envelope.getGoodbye().getReason());
        log.info("{} ({}): {}", workerId, channel.remoteAddress(), reason);
        closeWithoutGoodbye(reason);
      }
      case HELLO -> refuse("second Hello on a live session");
      default -> refuse("unexpected " + body + " from a worker");
    }
  }

  private void onHello(Hello hello) {
    String problem = helloProblem(hello);
    if (problem != null) {
      refuse("Hello refused: " + problem);
      return;
    }
    workerId = hello.getWorkerId();
    List<HeldLease> held = hello.getHeldList().stream().map(h -> new HeldLease(h.getJobId(), h.getToken())).toList();
    if (!held.isEmpty() && !hello.getStoreId().equals(server.storeId())) {
      // Job ids and tokens are only unique within one store: these would match unrelated jobs here. The
      // Welcome's store id makes the worker drop them; their own store re-runs them.
      log.warn("worker {} ({}) holds {} jobs of store '{}', not of this coordinator's store '{}'; they are not claimed",
          workerId, hello.getName(), held.size(), hello.getStoreId(), server.storeId());
      held = List.of();
    }
    handle = new RemoteWorker(this, workerId, hello.getName(), hello.getSlots(), settings.dispatchWindow(hello.getSlots()), held);
    state = State.JOINING;
    WorkerConnection previous = server.register(workerId, this);
    if (previous == null) {
      join(hello);
      return;
    }
    // Pause reading so that what the new session says waits (bounded by one read) until the old one is
    // reported lost; then join on our own loop.
    channel.config().setAutoRead(false);
    log.info("{} ({}) supersedes its session at {}", workerId, channel.remoteAddress(), previous.remoteAddress());
    previous.closeFromAnyThread("superseded by a new session");
    predecessorEnded = previous.ended;
    predecessor = previous;
    previous.ended.whenComplete((ignored, error) -> onLoop(() -> join(hello)));
  }

  private static String helloProblem(Hello hello) {
    if (hello.getWorkerId().isEmpty()) {
      return "worker_id is empty";
    }
    if (hello.getWorkerId().length() > MAX_ID_CHARS || hello.getName().length() > MAX_ID_CHARS) {
      return "worker_id and name must be at most " + MAX_ID_CHARS + " characters";
    }
    int slots = hello.getSlots(); // uint32: above 2^31-1 reads negative, and is refused with the rest
    if (slots < 1 || slots > WorkerServer.MAX_WORKER_SLOTS) {
      return "slots must be between 1 and " + WorkerServer.MAX_WORKER_SLOTS + ", got " + Integer.toUnsignedString(slots);
    }
    return null;
  }

  private void join(Hello hello) {
    if (state != State.JOINING) {
      return; // closed while waiting for the superseded session
    }
    String sessionId = UUID.randomUUID().toString();
    channel.writeAndFlush(Envelope.newBuilder()
            .setWelcome(Welcome.newBuilder()
                .setSessionId(sessionId)
                .setHeartbeatIntervalMillis((int) settings.heartbeatInterval().toMillis())
                .setCoordinatorEpoch(settings.coordinatorEpoch())
                .setStoreId(server.storeId()))
            .build(),
        channel.voidPromise());
    if (state != State.JOINING) {
      return; // the Welcome could not be sent, and the connection was refused
    }
    state = State.JOINED;
    joined = true;
    lastWriteNanos = ticker.nanos();
    long intervalNanos = settings.heartbeatInterval().toNanos();
    heartbeats = channel.eventLoop().scheduleAtFixedRate(
        this::heartbeatIfIdle, intervalNanos, intervalNanos, TimeUnit.NANOSECONDS);
    log.info("worker {} ({}) joined from {}: {} slots, version {}, session {}", workerId, hello.getName(),
        channel.remoteAddress(), hello.getSlots(), hello.getVersion(), sessionId);
    events.workerJoined(handle);
    for (Envelope held; state == State.JOINED && (held = heldWhileJoining.poll()) != null; ) {
      handle(held);
    }
    heldWhileJoining.clear();
    channel.config().setAutoRead(true);
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

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (state == State.CLOSED) {
      log.debug("{} after close: {}", channel.remoteAddress(), cause.toString());
      return;
    }
    if (cause instanceof DecoderException) {
      refuse("malformed frame: " + cause.getMessage());
    } else if (cause instanceof EncoderException) {
      refuse("cannot send: " + cause.getMessage());
    } else if (cause instanceof IOException) {
      log.info("{} ({}): I/O error: {}", workerId, channel.remoteAddress(), cause.getMessage());
      closeWithoutGoodbye("I/O error: " + cause.getMessage());
    } else {
      log.error("{} ({}): internal error; closing the connection", workerId, channel.remoteAddress(), cause);
      closeWith("internal error: " + cause);
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (reaper != null) {
      reaper.cancel(false);
    }
    if (heartbeats != null) {
      heartbeats.cancel(false);
    }
    state = State.CLOSED;
    heldWhileJoining.clear();
    String reason = closeReason != null ? closeReason
        : server.isClosing() ? "coordinator shutting down" : "closed by peer";
    // Lost is reported before the worker id is released, so that no new session of this worker can
    // join while the scheduler still counts this one as live.
    if (joined && !lostReported) {
      lostReported = true;
      log.info("worker {} at {} lost: {}", workerId, channel.remoteAddress(), reason);
      try {
        events.workerLost(handle, reason);
      } catch (RuntimeException e) {
        log.error("the events sink failed on workerLost for {}", workerId, e);
      }
    } else {
      log.debug("connection from {} closed before joining: {}", channel.remoteAddress(), reason);
    }
    if (workerId != null) {
      if (!joined && predecessor != null && !predecessor.ended.isDone()) {
        // This session never joined: the one it superseded is still the worker's live session until it
        // has ended, so a third session must wait for it too (found by the superseding fuzz property).
        server.restore(workerId, this, predecessor);
      } else {
        server.unregister(workerId, this);
      }
    }
    predecessorEnded.whenComplete((ignored, error) -> ended.complete(null));
    ctx.fireChannelInactive();
  }

  /**
   * Runs on the reaper's schedule: publishes the suspicion to the handle (a worker at or above the drain
   * level gets no new jobs), logs when it crosses the drain level either way, and closes the connection
   * once the detector convicts it.
   */
  private void checkLiveness() {
    long now = ticker.nanos();
    if (state == State.CLOSED) {
      return;
    }
    long sinceLastCheck = now - lastCheckNanos;
    lastCheckNanos = now;
    if (sinceLastCheck > LATE_CHECKS * reapCheckPeriodNanos) {
      // This process was paused (a GC pause, SIGSTOP, a starved VM): the silence is ours, not the
      // worker's, and what it sent meanwhile may still be unread in the socket (after a long stop the
      // event loop can run its overdue tasks before its reads). Judge on the next check, once read.
      log.debug("liveness check of {} ran {} ms late; judging on the next one", workerId,
          TimeUnit.NANOSECONDS.toMillis(sinceLastCheck - reapCheckPeriodNanos));
      return;
    }
    double level = detector.suspicion(now);
    boolean draining = detector.draining(now);
    if (handle != null) {
      handle.suspicion(level, draining, String.format(java.util.Locale.ROOT, "%.2f of %.2f", level, detector.convictionLevel()));
      if (draining != drainingLogged) {
        drainingLogged = draining;
        if (draining) {
          log.warn("worker {} ({}) is suspected: suspicion {} at or above the drain level {} ({}); no new jobs until it is heard from",
              workerId, handle.name(), String.format(java.util.Locale.ROOT, "%.2f", level), detector.drainLevel(), detector.describe());
        } else {
          log.warn("worker {} ({}) is heard from again (suspicion {}); it takes new jobs", workerId, handle.name(),
              String.format(java.util.Locale.ROOT, "%.2f", level));
        }
      }
    }
    if (!detector.convicted(now)) {
      return;
    }
    long silenceMillis = TimeUnit.NANOSECONDS.toMillis(now - lastFrameNanos);
    String reason = "reaped after " + silenceMillis + "ms of silence (" + detector.describe() + ")";
    log.warn("{} at {}: {}", workerId != null ? workerId : "unidentified peer", channel.remoteAddress(), reason);
    closeWith(reason);
  }

  /**
   * Runs every heartbeat interval once joined: sends a {@code Heartbeat} unless a frame went out within
   * the last half interval, so that a worker hears from its coordinator at least every 1.5 intervals
   * while the link lives and can judge it with a failure detector of its own (a coordinator whose host
   * died or whose network path dropped, without the socket closing, goes silent). Busy sessions carry
   * assignments and acks instead, at no extra cost.
   */
  private void heartbeatIfIdle() {
    if (!open()) {
      return;
    }
    long now = ticker.nanos();
    if (now - lastWriteNanos < settings.heartbeatInterval().toNanos() / 2) {
      return;
    }
    writeAndFlush(Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(++heartbeatSeq)).build());
  }

  // ---- closing ----

  /** Logs a refusal with the peer's address, tells the peer why, and closes. */
  private void refuse(String reason) {
    log.warn("{} at {}: {}; closing", workerId != null ? workerId : "unidentified peer", channel.remoteAddress(),
        reason);
    closeWith(reason);
  }

  /**
   * Closes the connection, first sending a best-effort {@code Goodbye} with the reason: the close does not
   * wait for it to be written, so a peer that does not read cannot hold the connection open.
   */
  void closeWith(String reason) {
    if (state == State.CLOSED) {
      return;
    }
    // CLOSED first: if the Goodbye itself cannot be sent (say, it is larger than the frame limit), the
    // failure comes straight back through exceptionCaught, which must find the connection closing
    // instead of refusing it again with another Goodbye, without end.
    state = State.CLOSED;
    closeReason = reason;
    if (channel.isActive()) {
      channel.writeAndFlush(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason(reason)).build(),
          channel.voidPromise());
    }
    channel.close();
  }

  private void closeWithoutGoodbye(String reason) {
    if (state == State.CLOSED) {
      return;
    }
    state = State.CLOSED;
    closeReason = reason;
    channel.close();
  }

  /** {@link #closeWith} from any thread. */
  void closeFromAnyThread(String reason) {
    onLoop(() -> closeWith(reason));
  }

  // ---- outbound, for RemoteWorker ----

  /**
   * Runs {@code task} on this connection's event loop: now if already there, else queued. Dropped if the
   * loop has shut down (the server is closing; the session's end is reported by then).
   */
  void onLoop(Runnable task) {
    EventLoop loop = channel.eventLoop();
    if (loop.inEventLoop()) {
      task.run();
      return;
    }
    try {
      loop.execute(task);
    } catch (RejectedExecutionException e) {
      log.debug("dropped a task for {}: its event loop has shut down", workerId);
    }
  }

  /** Whether frames sent now can still reach the worker. Event loop only. */
  private boolean open() {
    return state == State.JOINED && channel.isActive();
  }

  /**
   * Writes a RunConfig for each run not yet configured on this session, then each assignment's Assign
   * frame, and flushes once. An assignment whose frame would exceed the frame limit is not sent: it is
   * reported ended with a retryable failure saying so, since the worker would refuse it and close. Event
   * loop only.
   */
  void writeAssignments(List<Assignment> assignments, List<Envelope> frames) {
    if (!open()) {
      log.debug("dropped {} assignments for {}: session closed", assignments.size(), workerId);
      return;
    }
    for (int i = 0; i < assignments.size(); i++) {
      Assignment a = assignments.get(i);
      Envelope frame = frames.get(i);
      int size = frame.getSerializedSize();
      if (size > settings.maxFrameBytes()) {
        String detail = "case " + a.caseId() + " is " + size + " bytes on the wire, above the frame limit of "
            + settings.maxFrameBytes() + " bytes";
        log.warn("job {}: {}; not sent to {}", a.jobId(), detail, workerId);
        events.attemptEnded(handle, AttemptReport.failed(a.jobId(), a.token(),
            new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, detail)));
        continue;
      }
      if (runsConfigured.put(a.runId(), Boolean.TRUE) == null) {
        channel.write(Envelope.newBuilder().setRunConfig(WireMapping.runConfig(a.runId(), a.evaluator())).build(),
            channel.voidPromise());
      }
      channel.write(frame, channel.voidPromise());
    }
    channel.flush();
    lastWriteNanos = ticker.nanos();
  }

  /** Writes one frame and flushes, if the session is still open; else drops it. Event loop only. */
  void writeAndFlush(Envelope frame) {
    if (open()) {
      channel.writeAndFlush(frame, channel.voidPromise());
      lastWriteNanos = ticker.nanos();
    } else {
      log.debug("dropped a {} for {}: session closed", frame.getBodyCase(), workerId);
    }
  }

  Object remoteAddress() {
    return channel.remoteAddress();
  }

  private static String clip(String s) {
    return s.length() <= MAX_QUOTED_REASON_CHARS ? s : s.substring(0, MAX_QUOTED_REASON_CHARS) + "...";
  }
}
