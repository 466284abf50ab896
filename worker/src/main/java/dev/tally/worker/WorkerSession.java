package dev.tally.worker;

import dev.tally.protocol.Envelope;
import dev.tally.protocol.codec.FrameCodec;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker process's connection to its coordinator: the Netty driver of a {@link SessionCore}, with the
 * slot threads ({@link Slots}) that run the cases and the {@link Outbox} that bounds their results.
 *
 * <h2>Use</h2>
 *
 * <pre>{@code
 * WorkerSession session = new WorkerSession(WorkerSettings.builder("coord", 7070).slots(8).build());
 * session.start();                 // connects in the background; returns at once
 * ... on SIGTERM: session.drain(); on a second one, or to stop at once: session.close();
 * session.awaitTermination();      // until the session ends
 * session.termination();           // how it ended (drained, gave up, stopped...)
 * }</pre>
 *
 * <h2>What it does</h2>
 *
 * The protocol's decisions are the core's (see {@link SessionCore}: Hello, Welcome, heartbeats, the
 * outbox, Assign, Abandon, Drain, judging the coordinator, graceful drain); reconnecting is the {@link
 * Reconnector}'s. This class carries them out: it connects with a Netty {@link Bootstrap} (keeping the
 * worker id across reconnects), writes and flushes the frames the core asks for, runs the core's timer at
 * {@link SessionCore#nextTickNanos()}, and hands the core every frame read, every end of a connection and
 * every case a slot finished. Running cases go on while the connection is down; their results wait in the
 * outbox.
 *
 * <h2>Threading</h2>
 *
 * One event-loop thread owns the core, the channel and the timers: every core event runs there, so the
 * core's state (its held jobs, its outbox entries, its run configurations) has one owner and no locks.
 * {@code slots} long-lived slot threads (see {@link Slots} for why they must never end) run the cases and
 * hand each end to the event loop through a lock-free queue; they block only for room in the outbox. The
 * public methods are safe to call from any thread.
 */
public final class WorkerSession implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerSession.class);

  /** Why a connection to a peer that answers like an HTTP server is left, as the worker says it. */
  static final String NOT_A_COORDINATOR_HTTP = "not a Tally coordinator (it answered like an HTTP server)";

  /** How long {@link #close()} waits for each step (Goodbye sent, slots ended, event loop stopped). */
  static final Duration CLOSE_STEP_TIMEOUT = Duration.ofSeconds(5);

  private final WorkerSettings settings;
  private final EventLoopGroup group;
  /** Whether the group is this session's own (shut down with it) rather than shared. */
  private final boolean ownsGroup;
  private final EventLoop loop;
  private final Bootstrap bootstrap;
  private final Outbox outbox;
  private final Slots slots;
  private final SessionCore core;

  // ---- Event-loop confined ----
  private Channel channel; // the current connection, connecting or connected; null between attempts
  private String channelFailure; // the I/O error that is closing the current channel, if any
  private ChannelFuture lastWrite;
  private ScheduledFuture<?> connectTask;
  /** The coordinator address of the current (or last) connection attempt; event loop only. */
  private WorkerSettings.Address current;
  /** Connection attempts so far: the next tries address {@code connects % addresses}; event loop only. */
  private int connects;
  private ScheduledFuture<?> tickTask;
  private long tickAtNanos;

  // ---- Shared ----
  private final ConcurrentLinkedQueue<CaseEnd> caseEnds = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean caseEndsScheduled = new AtomicBoolean();
  /** Whether an ended case's result waits for the ones right behind it (one frame write for them all). */
  private final ResultLinger linger = new ResultLinger(ResultLinger.DEFAULT);
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final CountDownLatch terminated = new CountDownLatch(1);
  /** Completed with the address of the first coordinator that welcomed this worker. */
  private final CompletableFuture<String> joined = new CompletableFuture<>();
  private volatile Termination termination;

  /** Prepares a session on an event-loop thread of its own; nothing starts until {@link #start()}. */
  public WorkerSession(WorkerSettings settings) {
    this(settings, null);
  }

  /**
   * Prepares a session on one event loop of {@code shared}, which many sessions may share (the simulated
   * workers of {@code tally bench-connections}: hundreds of sessions in one process on a few threads). The
   * session's state is still confined to that one loop. Closing the session stops its timers and leaves
   * the group running: its owner shuts it down. Nothing starts until {@link #start()}.
   *
   * @param shared the group to take an event loop from, or null for a loop of the session's own
   */
  public WorkerSession(WorkerSettings settings, EventLoopGroup shared) {
    this.settings = settings;
    this.ownsGroup = shared == null;
    this.group = shared != null ? shared : new MultiThreadIoEventLoopGroup(
        1, new DefaultThreadFactory("tally-worker-io", true), NioIoHandler.newFactory());
    this.loop = group.next();
    this.outbox = new Outbox();
    // The core admits at most slots + maxQueuedAssignments attempts, so this queue never refuses one.
    this.slots = new Slots(settings.slots(), settings.slots() + settings.maxQueuedAssignments(), "tally-slot-",
        Slots.Room.of(outbox), settings.ticker(), this::onCaseEnd,
        this::onJournal);
    Reconnector reconnector = new Reconnector(addressesText(settings),
        new Backoff(settings.initialBackoff(), settings.maxBackoff(), new SplittableRandom()), settings.giveUpAfter());
    this.core = new SessionCore(settings, new NettyPort(), slots, outbox, reconnector);
    this.bootstrap = new Bootstrap()
        .group(loop)
        .channel(NioSocketChannel.class)
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.SO_KEEPALIVE, true)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) settings.connectTimeout().toMillis())
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            if (settings.tls() != null) {
              // The host given is the one the coordinator's certificate must name (and the SNI sent).
              ch.pipeline().addLast("tls", settings.tls().newHandler(ch.alloc(), current.host(), current.port()));
            }
            FrameCodec.install(ch.pipeline(), settings.maxFrameBytes());
            ch.pipeline().addLast("session", new Handler());
          }
        });
  }

  // ---------------------------------------------------------------- public API

  /**
   * Starts the slot threads and connects in the background (retrying with backoff until the session
   * ends). Returns at once.
   *
   * @throws IllegalStateException if called twice or after {@link #close()}
   */
  public void start() {
    if (stopping.get() || !started.compareAndSet(false, true)) {
      throw new IllegalStateException("start() may be called once, before close()");
    }
    log.info("worker {} ({}) starting: {} slots, coordinator {}",
        settings.workerId(), settings.name(), settings.slots(), addressesText(settings));
    slots.startThreads();
    onLoop(() -> core.start(now()));
  }

  /**
   * Begins a graceful drain (see {@link SessionCore#drain}): the coordinator is told, jobs not yet started
   * are handed back at once, and running cases get up to the settings' {@code drainTimeout} to finish and
   * deliver their results; then the session ends by itself. Returns at once; a second call, or a call
   * before {@link #start()} or after the end, does nothing.
   */
  public void drain() {
    if (started.get() && !stopping.get()) {
      onLoop(() -> core.drain(now(), settings.drainTimeout()));
    }
  }

  /**
   * Stops at once: sends Goodbye if connected, cancels every queued and running case (killing exec
   * process trees; their results are not reported, the coordinator re-queues them when the connection
   * closes), and stops the threads. Waits for each step at most {@link #CLOSE_STEP_TIMEOUT}. Idempotent;
   * safe from any thread, including a shutdown hook; after the session ended by itself it only waits for
   * that end to be complete.
   */
  @Override
  public void close() {
    close("worker closing");
  }

  /**
   * Stops at once, as {@link #close()} does, saying {@code reason} in the Goodbye (the coordinator's log
   * and {@code tally status} show it as why the worker left).
   */
  public void close(String reason) {
    if (!stopping.compareAndSet(false, true)) {
      awaitQuietly();
      return;
    }
    if (!started.get()) {
      termination = new Termination(Termination.Kind.STOPPED, "closed before it started");
      outbox.close();
      stopLoop(0);
      terminated.countDown();
      return;
    }
    try {
      loop.submit(() -> core.stop(reason)).get(CLOSE_STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      log.warn("could not say goodbye cleanly: {}", e.toString());
    }
    tearDown();
  }

  /** Blocks until the session has ended and its threads have stopped. */
  public void awaitTermination() throws InterruptedException {
    terminated.await();
  }

  /** Blocks until the session has ended or {@code max} has passed; true if it ended. */
  public boolean awaitTermination(Duration max) throws InterruptedException {
    return terminated.await(max.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** How the session ended, or null while it runs. */
  public Termination termination() {
    return termination;
  }

  /**
   * Completes, with that coordinator's address ({@code host:port}), when a coordinator first welcomes this
   * worker (on the session's event loop: a stage added to it must not block); later Welcomes, after
   * reconnects, do not change it. Never completes if the
   * session ends without a Welcome.
   */
  public CompletionStage<String> joined() {
    return joined;
  }

  /** True while a connection is up and welcomed (between Welcome and its loss). */
  public boolean connected() {
    return core.welcomed();
  }

  /** Results not yet acknowledged by the coordinator (sent, or waiting for a connection). */
  public int outboxSize() {
    return outbox.size();
  }

  /** Cases finished and put in the outbox since start (abandoned ones not counted). */
  public long completedCount() {
    return core.completedCount();
  }

  /** This process's worker id, the same across reconnects. */
  public String workerId() {
    return settings.workerId().toString();
  }

  // ---------------------------------------------------------------- driving the core (event loop)

  private long now() {
    return settings.ticker().nanos();
  }

  /** Runs a core event on the event loop, then flushes and re-arms the timer; dropped once the loop is gone. */
  private void onLoop(Runnable event) {
    try {
      loop.execute(() -> {
        event.run();
        afterEvents();
      });
    } catch (RejectedExecutionException e) {
      log.debug("dropped an event: the event loop has shut down");
    }
  }

  /** After a batch of core events: one flush, and the timer at the core's next deadline. */
  private void afterEvents() {
    core.flush();
    long next = core.nextTickNanos();
    if (next == SessionCore.NO_TICK || (tickTask != null && tickAtNanos - next <= 0)) {
      return; // nothing due, or an earlier (possibly stale, harmless) tick is already armed
    }
    if (tickTask != null) {
      tickTask.cancel(false);
    }
    tickAtNanos = next;
    tickTask = loop.schedule(this::onTick, Math.max(0, next - now()), TimeUnit.NANOSECONDS);
  }

  private void onTick() {
    tickTask = null;
    core.tick(now());
    afterEvents();
  }

  /**
   * Called on a slot thread: a case journals a response; the core sends it and completes the answer. If the
   * event loop is gone the session has ended, and the answer says so.
   */
  private void onJournal(dev.tally.core.JournalEntry entry,
      CompletableFuture<dev.tally.core.JournalEntry.Status> answer) {
    try {
      loop.execute(() -> {
        core.journal(entry, answer, now());
        afterEvents();
      });
    } catch (RejectedExecutionException e) {
      answer.completeExceptionally(new IllegalStateException("the worker's session has ended"));
    }
  }

  /**
   * Called on a slot thread: one drain task (one flush) serves every case that ended by then. When results
   * are coming thick ({@link ResultLinger}), the drain waits out the linger and takes them all.
   */
  private void onCaseEnd(CaseEnd end) {
    caseEnds.add(end);
    boolean thick = linger.ended(now(), slots.queued());
    if (caseEndsScheduled.compareAndSet(false, true)) {
      try {
        if (thick) {
          loop.schedule(this::drainCaseEnds, linger.linger().toNanos(), TimeUnit.NANOSECONDS);
        } else {
          loop.execute(this::drainCaseEnds);
        }
      } catch (RejectedExecutionException e) {
        // Ending: the event loop is gone and so is the connection; the coordinator re-queues the job.
      }
    }
  }

  private void drainCaseEnds() {
    caseEndsScheduled.set(false);
    long now = now();
    for (CaseEnd end; (end = caseEnds.poll()) != null; ) {
      core.caseEnded(end, now);
    }
    afterEvents();
  }

  private void connect() {
    connectTask = null;
    if (termination != null) {
      return;
    }
    // Each attempt tries the next address: of several coordinators on one store only the leader has its
    // worker port open, and after a session ends the leader may be another one.
    current = settings.addresses().get(connects++ % settings.addresses().size());
    ChannelFuture f = bootstrap.connect(current.host(), current.port());
    channel = f.channel();
    channelFailure = null;
    lastWrite = null;
    f.addListener((ChannelFutureListener) future -> {
      if (!future.isSuccess() && future.channel() == channel) {
        channel = null;
        core.connectFailed(reason(future.cause()), now());
        afterEvents();
      }
    });
  }

  /** The coordinator addresses, for the log: {@code a:1} or {@code a:1,b:2}. */
  private static String addressesText(WorkerSettings settings) {
    return settings.addresses().stream().map(WorkerSettings.Address::toString)
        .collect(java.util.stream.Collectors.joining(","));
  }

  private String reason(Throwable cause) {
    if (cause == null) {
      return "unknown error";
    }
    Throwable root = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null ? cause.getCause() : cause;
    if (root instanceof NotSslRecordException) {
      return "the coordinator did not answer in TLS: is it started with --tls-cert and --tls-key? (this worker has --tls-ca)";
    }
    if (root instanceof SSLException) {
      return "TLS handshake with the coordinator failed: " + root.getMessage() + " (the coordinator's certificate must"
          + " be signed by the CA of --tls-ca and name " + current.host() + ")";
    }
    if (cause instanceof java.net.UnknownHostException) {
      // Its message is the bare host name once the JVM caches the failed lookup.
      return "unknown host (" + cause.getMessage() + ")";
    }
    String message = cause.getMessage();
    return message == null || message.isBlank() ? cause.getClass().getSimpleName() : message;
  }

  /** The core's requests, carried out on the event loop (the core calls them only there). */
  private final class NettyPort implements SessionPort {
    @Override
    public void send(Envelope frame) {
      if (channel != null) {
        lastWrite = channel.write(frame);
      }
    }

    @Override
    public void flush() {
      if (channel != null) {
        channel.flush();
      }
    }

    @Override
    public void close(boolean afterWrites) {
      Channel ch = channel;
      if (ch == null) {
        return;
      }
      if (afterWrites && lastWrite != null && !lastWrite.isDone()) {
        lastWrite.addListener(ChannelFutureListener.CLOSE);
        // A peer that stops reading must not hold the connection open for ever.
        loop.schedule(() -> ch.close(), CLOSE_STEP_TIMEOUT.toNanos(), TimeUnit.NANOSECONDS);
      } else {
        ch.close();
      }
    }

    @Override
    public void connectIn(long delayNanos) {
      if (connectTask != null) {
        connectTask.cancel(false);
      }
      log.debug("connecting in {} ms", TimeUnit.NANOSECONDS.toMillis(delayNanos));
      connectTask = loop.schedule(WorkerSession.this::connect, delayNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void joined() {
      joined.complete(String.valueOf(current));
    }

    @Override
    public void ended(Termination how) {
      termination = how;
      if (connectTask != null) {
        connectTask.cancel(false);
        connectTask = null;
      }
      if (tickTask != null) {
        tickTask.cancel(false);
        tickTask = null;
      }
      Channel ch = channel;
      if (ch != null && !ch.isActive()) {
        ch.close(); // a connect in progress
      }
      if (stopping.compareAndSet(false, true)) {
        // The session ended by itself (drained, gave up): stop the threads off the event loop.
        Thread t = new Thread(WorkerSession.this::tearDown, "tally-worker-stop");
        t.start();
      }
    }
  }

  // ---------------------------------------------------------------- ending

  /**
   * Stops the session's event loop: its own group is shut down (waiting up to twice {@code timeoutMillis});
   * on a shared group only the session's timers are cancelled, so nothing of it runs again there.
   */
  private void stopLoop(long timeoutMillis) {
    if (ownsGroup) {
      group.shutdownGracefully(0, timeoutMillis, TimeUnit.MILLISECONDS).awaitUninterruptibly(Math.max(1, timeoutMillis * 2));
      return;
    }
    try {
      loop.execute(() -> {
        if (tickTask != null) {
          tickTask.cancel(false);
        }
        if (connectTask != null) {
          connectTask.cancel(false);
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // the group's owner shut it down first: nothing of the session can run any more
    }
  }

  /** Waits for the connection to close, stops the slots and the event loop. Runs once, off the event loop. */
  private void tearDown() {
    long stepMillis = CLOSE_STEP_TIMEOUT.toMillis();
    try {
      ChannelFuture closing = loop.submit(() -> channel == null ? null : channel.closeFuture())
          .get(stepMillis, TimeUnit.MILLISECONDS);
      if (closing != null) {
        closing.await(stepMillis, TimeUnit.MILLISECONDS);
      }
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      log.debug("the connection did not close cleanly: {}", e.toString());
    }
    slots.shutdown(stepMillis, "worker closing");
    outbox.close();
    stopLoop(stepMillis);
    Termination how = termination;
    log.info("worker {} ended ({}); {} results were still unacknowledged", settings.workerId(),
        how == null ? "stopped" : how.detail(), outbox.size());
    terminated.countDown();
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
      Channel ch = ctx.channel();
      if (ch != channel) {
        ch.close();
      } else if (ch.localAddress() != null && ch.localAddress().equals(ch.remoteAddress())) {
        // TCP let a connection to a local port nobody listens on pick that very port as its own source
        // port and connect to itself; held open, it would keep the coordinator from binding its port.
        channel = null;
        ch.close();
        core.connectFailed("connected to itself on " + ch.localAddress() + " (the coordinator is not listening)", now());
        afterEvents();
      } else {
        core.connected(current.toString(), now());
        afterEvents();
      }
      ctx.fireChannelActive();
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Envelope env) {
      if (ctx.channel() == channel) {
        core.frameReceived(env, now());
      }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      if (ctx.channel() == channel) {
        afterEvents();
      }
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (ctx.channel() == channel) {
        channel = null;
        lastWrite = null;
        core.disconnected(channelFailure != null ? channelFailure : "connection closed", now());
        afterEvents();
      }
      ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
      if (event instanceof SslHandshakeCompletionEvent handshake && !handshake.isSuccess() && ctx.channel() == channel
          && channelFailure == null) {
        // The TLS handler closes the channel after a failed handshake; say why when it goes inactive.
        channelFailure = reason(handshake.cause());
      }
      ctx.fireUserEventTriggered(event);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // Logged when the channel goes inactive (a lost session, or a failed attempt), with this reason.
      log.debug("connection to {} failed: {}; closing it", current, cause.toString());
      if (ctx.channel() == channel && cause instanceof FrameCodec.HttpAnswerException) {
        // The user gave a web server's address: say that, not what its answer means as a frame length.
        core.notACoordinator(NOT_A_COORDINATOR_HTTP, now());
        afterEvents();
      } else if (ctx.channel() == channel && channelFailure == null) {
        channelFailure = reason(cause);
      }
      ctx.close();
    }
  }
}
