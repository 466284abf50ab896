package dev.tally.worker;

import dev.tally.core.InfraFailure;
import dev.tally.protocol.Abandon;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.codec.FrameCodec;
import dev.tally.protocol.mapping.WireMapping;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.HeldJob.Builder;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Result;
import dev.tally.protocol.ResultAck;
import dev.tally.protocol.RunConfig;
import dev.tally.protocol.Welcome;
import dev.tally.worker.HeldJob.RunSetup;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker process's side of the protocol: a Netty client that says Hello, heartbeats, runs assigned
 * cases in its slots, and delivers every result at least once.
 *
 * <h2>Use</h2>
 *
 * <pre>{@code
 * WorkerSession session = new WorkerSession(WorkerSettings.builder("coord", 7070).slots(8).build());
 * session.start();                 // connects in the background; returns at once
 * Runtime.getRuntime().addShutdownHook(new Thread(session::close));
 * session.awaitTermination();      // until close()
 * }</pre>
 *
 * <h2>What it does</h2>
 *
 * <ul>
 *   <li><b>Session.</b> On connect it sends {@code Hello} (worker id, name, slots, version, the jobs it
 *       holds). On {@code Welcome} it starts a heartbeat timer on the channel's event loop at the interval
 *       the Welcome gives, and re-sends its whole outbox. Heartbeats carry a sequence number (increasing
 *       for the process's lifetime) and the ids of the jobs it holds (queued or running). They never touch
 *       a slot thread, so a worker whose every slot is busy keeps heartbeating.
 *   <li><b>Work.</b> {@code RunConfig} builds the run's evaluator; {@code Assign} queues a job for the
 *       slots (a bounded queue: overflow is a coordinator bug and closes the connection). An Assign for a
 *       run without a usable RunConfig is answered at once with a retryable {@code EVALUATOR_CRASHED}.
 *   <li><b>Outbox.</b> Every finished case's Result stays in the outbox until a ResultAck (of any status)
 *       names it; it is sent when ready (writes coalesced into one flush per batch) and again after every
 *       reconnect. Delivery is at-least-once; the coordinator's fencing and dedup make it count once.
 *   <li><b>Abandon</b> stops the job if this worker holds it under that token (a queued job never starts, a
 *       running one is cancelled and an exec case's process tree killed) and the job is <em>not
 *       reported</em>: its lease is gone, so a report could only be fenced, and the coordinator already
 *       released the job. A job already finished keeps its outbox entry; its ack comes as usual.
 *   <li><b>Connection lost</b>: running cases go on; their results wait in the outbox. The session
 *       reconnects with exponential backoff and full jitter ({@link Backoff}), keeping its worker id.
 *   <li><b>Drain</b>: jobs already held (queued or running) are finished and reported; any later Assign is
 *       refused with a retryable {@code EVALUATOR_CRASHED} "worker is draining", so no job waits on a
 *       worker that will not run it. A Drain lasts for the session that received it: after a reconnect
 *       the coordinator says it again if it still means it. <b>Goodbye</b> from the coordinator is logged; the session keeps
 *       reconnecting (a restarted coordinator wants the outbox) until {@link #close()}.
 * </ul>
 *
 * <h2>Threading</h2>
 *
 * One event-loop thread (one connection at a time) owns the channel, heartbeat timer, run configurations
 * and outbox: those fields are touched only there and need no locks. {@code slots} long-lived slot threads
 * (see {@link Slots} for why they must never end) run the cases and hand results to the event loop through
 * a lock-free queue. The public methods are safe to call from any thread.
 */
public final class WorkerSession implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerSession.class);

  /**
   * Results held (waiting to be acked, or to be sent) before slots stop starting new cases. Acks lag results
   * by the coordinator's group commit (milliseconds); 10,000 covers far more than that at 20,000 evals/s,
   * and caps the outbox's memory at about 10,000 x 8 KiB (a full output tail) = 80 MiB. The outbox can
   * exceed it by at most the number of slots (cases already running finish and report) plus refusals the
   * event loop answers itself (each one an Assign the coordinator sent within its window).
   */
  public static final int OUTBOX_LIMIT = 10_000;

  /** The heartbeat interval used if a Welcome gives 0 (a coordinator bug; logged). */
  static final Duration FALLBACK_HEARTBEAT_INTERVAL = Duration.ofMillis(500);

  /**
   * While connecting keeps failing, the least time between two WARN lines saying so (INFO in between). The
   * first failure after start or after a lost session is always a WARN.
   */
  static final Duration CONNECT_FAILURE_WARN_INTERVAL = Duration.ofSeconds(30);

  /** How long {@link #close()} waits for each step (Goodbye sent, slots ended, event loop stopped). */
  static final Duration CLOSE_STEP_TIMEOUT = Duration.ofSeconds(5);

  private final WorkerSettings settings;
  private final EventLoopGroup group;
  private final EventLoop loop;
  private final Bootstrap bootstrap;
  private final Slots slots;
  private final Backoff backoff;

  // ---- Event-loop confined ----
  private Channel channel; // the current connection, connecting or connected; null between attempts
  private boolean welcomed;
  private boolean draining;
  private boolean flushPending;
  private long heartbeatSeq;
  private ScheduledFuture<?> heartbeatTask;
  private ScheduledFuture<?> reconnectTask;
  private boolean connectFailing; // a connect failed since start, the last Welcome or the last lost session
  private long lastConnectWarnNanos;
  private String closeReason; // why the current channel is closing, if known (an error, a Goodbye)
  private final Map<Long, RunSetup> runs = new HashMap<>();
  private final Map<HeldJob.Key, Result> outbox = new LinkedHashMap<>();
  /** The store (Welcome.store_id) the held jobs and the outbox came from; empty before the first Welcome. */
  private String storeId = "";

  // ---- Shared between the event loop and slot threads ----
  private final Map<HeldJob.Key, HeldJob> held = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Result> ready = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean drainScheduled = new AtomicBoolean();
  /** Results in the outbox plus those on their way to it. */
  private final AtomicInteger outboxCount = new AtomicInteger();
  private final Object outboxRoom = new Object();
  private final AtomicLong completed = new AtomicLong();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final CountDownLatch terminated = new CountDownLatch(1);
  private volatile boolean connected;
  private volatile boolean closed;

  /** Prepares a session; nothing starts until {@link #start()}. */
  public WorkerSession(WorkerSettings settings) {
    this.settings = settings;
    this.group =
        new MultiThreadIoEventLoopGroup(
            1, new DefaultThreadFactory("tally-worker-io", true), NioIoHandler.newFactory());
    this.loop = group.next();
    this.backoff = new Backoff(settings.initialBackoff(), settings.maxBackoff(), new SplittableRandom());
    this.slots =
        new Slots(
            settings.slots(), settings.maxQueuedAssignments(), "tally-slot-", this::awaitOutboxRoom, this::runJob);
    this.bootstrap =
        new Bootstrap()
            .group(loop)
            .channel(NioSocketChannel.class)
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.SO_KEEPALIVE, true)
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) settings.connectTimeout().toMillis())
            .handler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    FrameCodec.install(ch.pipeline(), settings.maxFrameBytes());
                    ch.pipeline().addLast("session", new Handler());
                  }
                });
  }


  // ---------------------------------------------------------------- public API

  /**
   * Starts the slot threads and connects in the background (retrying with backoff until {@link #close()}).
   * Returns at once.
   *
   * @throws IllegalStateException if called twice or after {@link #close()}
   */
  public void start() {
    if (closing.get() || !started.compareAndSet(false, true)) {
      throw new IllegalStateException("start() may be called once, before close()");
    }
    log.info(
        "worker {} ({}) starting: {} slots, coordinator {}:{}",
        settings.workerId(), settings.name(), settings.slots(), settings.host(), settings.port());
    slots.start();
    loop.execute(this::connect);
  }

  /**
   * Ends the session: sends Goodbye if connected, stops heartbeats and reconnects, cancels every queued
   * and running case (killing exec process trees; their results are not reported, the coordinator
   * re-queues them when the connection closes), and stops the threads. Waits for each step at most
   * {@link #CLOSE_STEP_TIMEOUT}. Idempotent; safe from any thread, including a shutdown hook.
   */
  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) {
      awaitQuietly();
      return;
    }
    closed = true;
    try {
      if (started.get()) {
        shutDown();
      } else {
        group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      }
    } finally {
      synchronized (outboxRoom) {
        outboxRoom.notifyAll();
      }
      terminated.countDown();
    }
  }

  /** Blocks until {@link #close()} has finished. */
  public void awaitTermination() throws InterruptedException {
    terminated.await();
  }

  /** Blocks until {@link #close()} has finished or {@code max} has passed; true if it finished. */
  public boolean awaitTermination(Duration max) throws InterruptedException {
    return terminated.await(max.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** True while a connection is up and welcomed (between Welcome and its loss). */
  public boolean connected() {
    return connected;
  }

  /** Results not yet acknowledged by the coordinator (sent or waiting to be sent). */
  public int outboxSize() {
    return outboxCount.get();
  }

  /** Cases finished and handed to the outbox since start (abandoned ones not counted). */
  public long completedCount() {
    return completed.get();
  }

  /** This process's worker id, the same across reconnects. */
  public String workerId() {
    return settings.workerId().toString();
  }

  // ---------------------------------------------------------------- connection (event loop)

  private void connect() {
    reconnectTask = null;
    if (closed) {
      return;
    }
    ChannelFuture f = bootstrap.connect(settings.host(), settings.port());
    channel = f.channel();
    closeReason = null;
    f.addListener(
        (ChannelFutureListener)
            future -> {
              if (!future.isSuccess() && future.channel() == channel) {
                channel = null;
                onConnectFailure(reason(future.cause()));
                scheduleReconnect();
              }
            });
  }

  /**
   * Logs a failed attempt to reach the coordinator: WARN for the first since start or since a lost
   * session, then at most once per {@link #CONNECT_FAILURE_WARN_INTERVAL}, INFO in between (the CLI shows
   * WARN and up only).
   */
  private void onConnectFailure(String reason) {
    long now = settings.ticker().nanos();
    if (!connectFailing || now - lastConnectWarnNanos >= CONNECT_FAILURE_WARN_INTERVAL.toNanos()) {
      connectFailing = true;
      lastConnectWarnNanos = now;
      log.warn("cannot reach coordinator {}:{}: {}; retrying with backoff", settings.host(), settings.port(), reason);
    } else {
      log.info("cannot reach coordinator {}:{}: {}; retrying with backoff", settings.host(), settings.port(), reason);
    }
  }

  private static String reason(Throwable cause) {
    if (cause == null) {
      return "unknown error";
    }
    String message = cause.getMessage();
    return message == null || message.isBlank() ? cause.getClass().getSimpleName() : message;
  }

  private void scheduleReconnect() {
    if (closed || reconnectTask != null) {
      return;
    }
    Duration delay = backoff.next();
    log.debug("reconnecting in {} ms", delay.toMillis());
    reconnectTask = loop.schedule(this::connect, delay.toNanos(), TimeUnit.NANOSECONDS);
  }

  private void onActive(Channel ch) {
    if (ch != channel) {
      ch.close();
      return;
    }
    if (ch.localAddress() != null && ch.localAddress().equals(ch.remoteAddress())) {
      // TCP let a connection to a local port nobody listens on pick that very port as its own source
      // port and connect to itself; held open, it would keep the coordinator from binding its port.
      log.debug("connected to itself on {} (the coordinator is not listening); retrying", ch.localAddress());
      ch.close();
      return;
    }
    drainReady(); // pending results join the outbox so that Hello lists them
    Hello.Builder hello =
        Hello.newBuilder()
            .setWorkerId(workerId())
            .setName(settings.name())
            .setSlots(settings.slots())
            .setVersion(settings.version())
            .setStoreId(storeId);
    Set<HeldJob.Key> holding = new LinkedHashSet<>();
    held.values().stream().filter(HeldJob::active).forEach(j -> holding.add(j.key));
    holding.addAll(outbox.keySet());
    for (HeldJob.Key k : holding) {
      Builder h = dev.tally.protocol.HeldJob.newBuilder().setJobId(k.jobId()).setToken(k.token());
      hello.addHeld(h);
    }
    ch.writeAndFlush(Envelope.newBuilder().setHello(hello).build());
  }

  private void onInactive(Channel ch) {
    if (ch != channel) {
      return;
    }
    channel = null;
    boolean wasWelcomed = welcomed;
    welcomed = false;
    connected = false;
    flushPending = false;
    if (heartbeatTask != null) {
      heartbeatTask.cancel(false);
      heartbeatTask = null;
    }
    if (!closed) {
      String reason = closeReason != null ? closeReason : "connection closed";
      if (wasWelcomed) {
        connectFailing = false; // the next failure to reconnect is news: WARN it
        log.warn(
            "lost the coordinator at {}:{}: {}; reconnecting ({} results in the outbox, {} jobs held)",
            settings.host(), settings.port(), reason, outbox.size(), held.size());
      } else {
        onConnectFailure(reason + " before Welcome");
      }
      scheduleReconnect();
    }
  }

  private void onWelcome(Channel ch, Welcome welcome) {
    long intervalMillis = welcome.getHeartbeatIntervalMillis();
    if (intervalMillis == 0) {
      log.warn("Welcome has no heartbeat interval; using {}", FALLBACK_HEARTBEAT_INTERVAL);
      intervalMillis = FALLBACK_HEARTBEAT_INTERVAL.toMillis();
    }
    drainReady(); // not yet welcomed: this only moves results into the outbox, the loop below sends them
    String welcomingStore = welcome.getStoreId();
    if (!welcomingStore.equals(storeId) && (!outbox.isEmpty() || !held.isEmpty())) {
      dropJobsOfAnotherStore(welcomingStore);
    }
    storeId = welcomingStore;
    welcomed = true;
    connected = true;
    draining = false; // a Drain belongs to the session that sent it
    backoff.reset();
    connectFailing = false;
    runs.clear(); // RunConfig is sent once per run per session; queued jobs keep their own setup
    if (heartbeatTask != null) {
      heartbeatTask.cancel(false);
    }
    heartbeatTask =
        ch.eventLoop()
            .scheduleAtFixedRate(() -> sendHeartbeat(ch), intervalMillis, intervalMillis, TimeUnit.MILLISECONDS);
    for (Result r : outbox.values()) {
      ch.write(Envelope.newBuilder().setResult(r).build());
    }
    ch.flush();
    log.info(
        "welcomed by coordinator (session {}, epoch {}, heartbeat every {} ms); re-sent {} results",
        welcome.getSessionId(), welcome.getCoordinatorEpoch(), intervalMillis, outbox.size());
  }

  /**
   * The coordinator now records into another store than the one this worker's jobs and unacknowledged
   * results came from (a different coordinator took over the address). Their job ids and tokens would
   * match unrelated jobs there, so they are dropped, and running cases stopped; their own store's
   * coordinator re-runs them when their leases expire (at-least-once).
   */
  private void dropJobsOfAnotherStore(String welcomingStore) {
    int results = outbox.size();
    for (int i = 0; i < results; i++) {
      releaseOutboxSlot();
    }
    outbox.clear();
    int jobs = 0;
    for (HeldJob job : List.copyOf(held.values())) {
      if (job.abandon("the coordinator now serves another store")) {
        held.remove(job.key, job);
        slots.remove(job);
        jobs++;
      }
    }
    log.warn("the coordinator at {}:{} records into store '{}', not '{}' where this worker's jobs came from: "
            + "dropped {} unacknowledged results and stopped {} jobs (their own store re-runs them)",
        settings.host(), settings.port(), welcomingStore, storeId, results, jobs);
  }

  private void sendHeartbeat(Channel ch) {
    if (ch != channel || !welcomed) {
      return;
    }
    Heartbeat.Builder hb = Heartbeat.newBuilder().setSeq(++heartbeatSeq);
    held.values().stream().filter(HeldJob::active).mapToLong(j -> j.key.jobId()).distinct().forEach(hb::addInFlight);
    ch.writeAndFlush(Envelope.newBuilder().setHeartbeat(hb).build());
  }

  // ---------------------------------------------------------------- messages (event loop)

  private void onEnvelope(Channel ch, Envelope env) {
    if (ch != channel) {
      return;
    }
    switch (env.getBodyCase()) {
      case WELCOME -> onWelcome(ch, env.getWelcome());
      case RUN_CONFIG -> onRunConfig(env.getRunConfig());
      case ASSIGN -> onAssign(ch, env.getAssign());
      case RESULT_ACK -> onResultAck(env.getResultAck());
      case ABANDON -> onAbandon(env.getAbandon());
      case HEARTBEAT -> { } // the coordinator's proof of life
      case DRAIN -> {
        draining = true;
        log.info("draining: {} ({} jobs held); new assignments will be refused", env.getDrain().getReason(), held.size());
      }
      case GOODBYE -> {
        closeReason = "coordinator said goodbye: " + env.getGoodbye().getReason();
        log.info("coordinator said goodbye: {}", env.getGoodbye().getReason());
      }
      case BODY_NOT_SET -> {
        log.error("protocol violation: an Envelope with no body; closing the connection");
        closeReason = "closed it after a protocol violation (an Envelope with no body)";
        ch.close();
      }
      default -> log.warn("ignoring a {} from the coordinator (a worker's message)", env.getBodyCase());
    }
  }

  private void onRunConfig(RunConfig rc) {
    String problem = null;
    Evaluator evaluator = null;
    Duration timeout = Duration.ofMillis(rc.getCaseTimeoutMillis());
    if (rc.getCaseTimeoutMillis() <= 0) {
      problem = "case_timeout_millis must be positive, got " + rc.getCaseTimeoutMillis();
    } else {
      try {
        evaluator = settings.evaluatorFactory().apply(rc.getEvaluator(), rc.getOptionsMap());
      } catch (RuntimeException e) {
        problem = e.getMessage();
      }
    }
    if (problem != null) {
      log.warn("RunConfig for run {} is unusable here: {}", rc.getRunId(), problem);
    }
    runs.put(rc.getRunId(), new RunSetup(rc.getRunId(), evaluator, timeout, problem));
  }

  private void onAssign(Channel ch, Assign a) {
    HeldJob.Key key = new HeldJob.Key(a.getJobId(), a.getToken());
    if (held.containsKey(key) || outbox.containsKey(key)) {
      log.warn("duplicate Assign for job {} token {}; ignored", a.getJobId(), a.getToken());
      return;
    }
    if (draining) {
      refuse(ch, key, "worker is draining: assignment refused");
      return;
    }
    RunSetup setup = runs.get(a.getRunId());
    if (setup == null) {
      refuse(ch, key, "no RunConfig for run " + a.getRunId());
      return;
    }
    if (setup.problem() != null) {
      refuse(ch, key, "bad RunConfig for run " + a.getRunId() + ": " + setup.problem());
      return;
    }
    HeldJob job = new HeldJob(key, a.getRunId(), a.getCaseId(), a.getCaseJson().toStringUtf8(), setup);
    held.put(key, job);
    if (!slots.offer(job)) {
      held.remove(key);
      log.error(
          "protocol violation: Assign for job {} overflows the queue of {} assignments (more than the"
              + " dispatch window); closing the connection",
          a.getJobId(), settings.maxQueuedAssignments());
      closeReason = "closed it after a protocol violation (Assign queue overflow)";
      ch.close();
    }
  }

  /** Answers an Assign at once with a retryable failure (sent with the read batch's flush). */
  private void refuse(Channel ch, HeldJob.Key key, String detail) {
    log.warn("job {} token {}: {}", key.jobId(), key.token(), detail);
    Result r =
        resultFrame(key, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, detail, 0));
    outboxCount.incrementAndGet();
    outbox.put(key, r);
    if (welcomed) { // else the Welcome re-sends it with the rest of the outbox
      ch.write(Envelope.newBuilder().setResult(r).build());
      flushPending = true;
    }
  }

  private void onResultAck(ResultAck ack) {
    for (AckEntry e : ack.getEntriesList()) {
      if (outbox.remove(new HeldJob.Key(e.getJobId(), e.getToken())) != null) {
        releaseOutboxSlot();
      }
      if (e.getStatus() == AckEntry.Status.FENCED) {
        // The case already ended (this was its result); the coordinator discarded it. Nothing to stop.
        log.debug("result for job {} token {} was fenced", e.getJobId(), e.getToken());
      }
    }
  }

  private void onAbandon(Abandon a) {
    HeldJob.Key key = new HeldJob.Key(a.getJobId(), a.getToken());
    HeldJob job = held.get(key);
    if (job != null && job.abandon("abandoned by the coordinator: " + a.getReason())) {
      held.remove(key, job);
      slots.remove(job);
      log.info("abandoned job {} token {}: {}", a.getJobId(), a.getToken(), a.getReason());
    } else {
      log.debug("Abandon for job {} token {} which is not running here; ignored", a.getJobId(), a.getToken());
    }
  }

  /** Moves ready results into the outbox and, if welcomed, writes them with one flush. */
  private void drainReady() {
    drainScheduled.set(false);
    boolean wrote = false;
    Result r;
    while ((r = ready.poll()) != null) {
      outbox.put(new HeldJob.Key(r.getJobId(), r.getToken()), r);
      if (welcomed) {
        channel.write(Envelope.newBuilder().setResult(r).build());
        wrote = true;
      }
    }
    if (wrote) {
      channel.flush();
    }
  }

  // ---------------------------------------------------------------- slots (slot threads)

  private void runJob(HeldJob job) {
    try {
      Evaluation evaluation = job.run(settings.ticker());
      if (evaluation != null && job.state.compareAndSet(HeldJob.State.RUNNING, HeldJob.State.DONE) && !closed) {
        completed.incrementAndGet(); // before the hand-off, so a test that saw the result sees the count
        handOff(resultFrame(job.key, evaluation));
      }
    } finally {
      held.remove(job.key, job); // after handOff: Hello lists it as held or in the outbox, never neither
    }
  }

  /** The Result frame of one evaluation, through the protocol's one mapping. */
  private static Result resultFrame(HeldJob.Key key, Evaluation evaluation) {
    if (evaluation instanceof Evaluation.Failed failed) {
      return WireMapping.result(key.jobId(), key.token(), failed.failure(), failed.durationMillis());
    }
    return WireMapping.result(key.jobId(), key.token(), ((Evaluation.Finished) evaluation).outcome());
  }

  /** Hands a result to the event loop; one drain task (one flush) serves every result ready by then. */
  private void handOff(Result result) {
    outboxCount.incrementAndGet();
    ready.add(result);
    if (drainScheduled.compareAndSet(false, true)) {
      try {
        loop.execute(this::drainReady);
      } catch (RejectedExecutionException e) {
        // Closing: the event loop is gone and so is the connection; the coordinator re-queues the job.
      }
    }
  }

  private void awaitOutboxRoom() throws InterruptedException {
    if (outboxCount.get() < OUTBOX_LIMIT) {
      return;
    }
    synchronized (outboxRoom) {
      while (outboxCount.get() >= OUTBOX_LIMIT && !closed) {
        outboxRoom.wait(100); // the timeout covers a notify racing ahead of this wait
      }
    }
  }

  private void releaseOutboxSlot() {
    if (outboxCount.decrementAndGet() == OUTBOX_LIMIT - 1) {
      synchronized (outboxRoom) {
        outboxRoom.notifyAll();
      }
    }
  }

  // ---------------------------------------------------------------- close

  private void shutDown() {
    long stepMillis = CLOSE_STEP_TIMEOUT.toMillis();
    try {
      ChannelFuture closeFuture =
          loop.submit(
                  () -> {
                    if (reconnectTask != null) {
                      reconnectTask.cancel(false);
                    }
                    if (heartbeatTask != null) {
                      heartbeatTask.cancel(false);
                    }
                    Channel ch = channel;
                    if (ch == null) {
                      return null;
                    }
                    if (welcomed) {
                      Envelope bye =
                          Envelope.newBuilder()
                              .setGoodbye(Goodbye.newBuilder().setReason("worker closing"))
                              .build();
                      ch.writeAndFlush(bye).addListener(ChannelFutureListener.CLOSE);
                    } else {
                      ch.close();
                    }
                    return ch.closeFuture();
                  })
              .get(stepMillis, TimeUnit.MILLISECONDS);
      if (closeFuture != null) {
        closeFuture.await(stepMillis, TimeUnit.MILLISECONDS);
      }
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      log.warn("could not say goodbye cleanly: {}", e.toString());
    }
    for (HeldJob job : held.values()) {
      job.abandon("worker closing");
    }
    slots.shutdown(stepMillis);
    group.shutdownGracefully(0, stepMillis, TimeUnit.MILLISECONDS).awaitUninterruptibly(stepMillis * 2);
    log.info("worker {} closed; {} results were still unacknowledged", settings.workerId(), outboxCount.get());
  }

  private void awaitQuietly() {
    try {
      terminated.await(CLOSE_STEP_TIMEOUT.toMillis() * 4, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** One per channel; every callback runs on the session's event loop. */
  private final class Handler extends SimpleChannelInboundHandler<Envelope> {
    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      onActive(ctx.channel());
      ctx.fireChannelActive();
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Envelope env) {
      onEnvelope(ctx.channel(), env);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      if (flushPending && ctx.channel() == channel) {
        flushPending = false;
        ctx.channel().flush();
      }
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      onInactive(ctx.channel());
      ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // Logged when the channel goes inactive (a lost session, or a failed attempt), with this reason.
      log.debug("connection to {}:{} failed: {}; closing it", settings.host(), settings.port(), cause.toString());
      if (ctx.channel() == channel && closeReason == null) {
        closeReason = reason(cause);
      }
      ctx.close();
    }
  }
}
