package dev.tally.coordinator.net;

import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Outcome;
import dev.tally.protocol.Result;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * {@link ConnectionCore}s of one worker port driven by hand: one thread, a manual clock, and a {@link
 * FakeConnection} as each core's port. Events go to a {@link RecordingEvents} through a {@link
 * WorkerEventsChecker}, so every test also checks the WorkerEvents contract.
 *
 * <p>Settings: heartbeats every {@link #INTERVAL_MILLIS} ms; a fixed-timeout detector over {@link
 * #WINDOW_MILLIS} ms (drain after 60% of it), checked every tenth of it.
 *
 * <p>Thread-safety: none; one test, one thread.
 */
final class CoreWorld {
  static final long INTERVAL_MILLIS = 100;
  static final long WINDOW_MILLIS = 1_000;
  static final long CHECK_MILLIS = WINDOW_MILLIS / 10;

  private long nowNanos = TimeUnit.SECONDS.toNanos(1_000); // any start: only differences count
  final RecordingEvents recorded = new RecordingEvents();
  final WorkerEventsChecker events = new WorkerEventsChecker(recorded);
  final LiveSessions sessions = new LiveSessions();
  final WorkerServer.Settings settings;
  final ConnectionCore.Context context;
  private int connections;

  CoreWorld() {
    this(WorkerServer.Settings.builder(), "store-a");
  }

  CoreWorld(WorkerServer.Settings.Builder settings, String storeId) {
    this.settings = settings.heartbeatInterval(Duration.ofMillis(INTERVAL_MILLIS))
        .detectionWindow(Duration.ofMillis(WINDOW_MILLIS))
        .detectorFactory(start -> new FixedTimeoutDetector(Duration.ofMillis(WINDOW_MILLIS), start))
        .ticker(this::now)
        .build();
    this.context = new ConnectionCore.Context(this.settings, storeId, events, sessions);
  }

  long now() {
    return nowNanos;
  }

  void advanceMillis(long millis) {
    nowNanos += TimeUnit.MILLISECONDS.toNanos(millis);
  }

  /** A new connection, active now, with a correct core. */
  FakeConnection connect() {
    return connect(PlantedConnectionFault.NONE);
  }

  /** A new connection, active now, whose core has {@code planted} planted. */
  FakeConnection connect(PlantedConnectionFault planted) {
    FakeConnection c = new FakeConnection(this, ++connections, planted);
    c.core.onActive(now());
    return c;
  }

  /** A connection whose worker said Hello and was welcomed (it superseded nobody). */
  FakeConnection joined(String workerId, int slots) {
    FakeConnection c = connect();
    c.receive(hello(workerId, slots));
    if (c.core.phase() != ConnectionCore.Phase.JOINED) {
      throw new AssertionError(workerId + " did not join: " + c.core.phase() + ", wrote " + c.written);
    }
    return c;
  }

  static Envelope hello(String workerId, int slots) {
    return Envelope.newBuilder().setHello(Hello.newBuilder().setWorkerId(workerId).setName(workerId + "-host")
        .setSlots(slots).setVersion("test")).build();
  }

  static Envelope passResult(long jobId, long token) {
    return Envelope.newBuilder().setResult(Result.newBuilder().setJobId(jobId).setToken(token)
        .setOutcome(Outcome.newBuilder().setVerdict(dev.tally.protocol.Verdict.PASS).setDurationMillis(1))).build();
  }

  /**
   * One connection's port: keeps what the core writes, notes flushes, closes, pauses and the predecessor
   * it waits for. Closing does not report the end by itself (Netty reports it later, too): {@link #end}
   * does, unless {@link #endOnClose} is set.
   */
  static final class FakeConnection implements ConnectionPort {
    final ConnectionCore core;
    private final CoreWorld world;
    final List<Envelope> written = new ArrayList<>();
    int flushedFrames;
    boolean closed;
    boolean readingPaused;
    boolean endOnClose;
    /**
     * Frames whose write fails as Netty's encoder fails one (too large, say): not kept, and reported to the
     * core at once as {@link ConnectionCore.ErrorKind#CANNOT_SEND}.
     */
    Predicate<Envelope> unsendable = frame -> false;
    CompletionStage<Void> awaitedPredecessor;

    FakeConnection(CoreWorld world, int number, PlantedConnectionFault planted) {
      this.world = world;
      this.core = new ConnectionCore(world.context, this, Runnable::run, "/10.0.0." + number + ":4000",
          "session-" + number, planted);
    }

    /** The worker's frame arrives now. */
    void receive(Envelope frame) {
      core.onFrame(frame, world.now());
    }

    /** The connection's close is reported (the peer's FIN, or our own close taking effect). */
    void end() {
      core.onInactive(false);
    }

    /** The driver's liveness tick, now. */
    void check() {
      core.onLivenessCheck(world.now());
    }

    /** The driver's heartbeat tick, now. */
    void tick() {
      core.onHeartbeatTick(world.now());
    }

    /** The driver's sweep (the liveness check, and the heartbeat tick when due), now. */
    void sweep() {
      core.onSweep(world.now());
    }

    /** Tells the core its predecessor ended, as the driver does once the awaited stage completes. */
    void predecessorEnded() {
      if (awaitedPredecessor == null || !awaitedPredecessor.toCompletableFuture().isDone()) {
        throw new AssertionError("the predecessor of " + core.peer() + " has not ended");
      }
      core.onPredecessorEnded(world.now());
    }

    List<Envelope.BodyCase> writtenKinds() {
      return written.stream().map(Envelope::getBodyCase).toList();
    }

    Envelope last() {
      return written.get(written.size() - 1);
    }

    RemoteWorker handle() {
      return core.handle();
    }

    @Override
    public void write(Envelope frame) {
      if (unsendable.test(frame)) {
        core.onError(ConnectionCore.ErrorKind.CANNOT_SEND, new IllegalArgumentException("frame too large"));
        return;
      }
      written.add(frame);
    }

    @Override
    public void flush() {
      flushedFrames = written.size();
    }

    @Override
    public boolean isOpen() {
      return !closed;
    }

    @Override
    public void close() {
      closed = true;
      if (endOnClose) {
        end();
      }
    }

    @Override
    public void pauseReading() {
      readingPaused = true;
    }

    @Override
    public void resumeReading() {
      readingPaused = false;
    }

    @Override
    public void awaitPredecessor(CompletionStage<Void> predecessorEnded) {
      awaitedPredecessor = predecessorEnded;
    }
  }
}
