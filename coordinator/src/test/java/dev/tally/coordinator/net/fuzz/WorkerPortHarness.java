package dev.tally.coordinator.net.fuzz;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Outcome;
import dev.tally.protocol.Result;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.core.ConditionFactory;
import org.slf4j.LoggerFactory;

/**
 * One real {@link WorkerServer} on 127.0.0.1 (ephemeral port, 64 KiB frame limit, a detection window long
 * enough that nobody is reaped during a property), shared by all tries of one property, with:
 *
 * <ul>
 *   <li>an {@link EventLog} sink;
 *   <li>a sentinel session joined at the start and checked at the end: the server's event loops still
 *       serve a connection that was open through every try;
 *   <li>a watch on the log: an ERROR from Tally ("internal error") or a WARN from Netty (an exception that
 *       reached the end of the pipeline, or one thrown by a handler's exceptionCaught) fails the property.
 * </ul>
 *
 * <p>While it runs, Tally's connection logs are raised to ERROR and Netty's to WARN (thousands of refused
 * connections would otherwise fill the test output); both are restored on close.
 *
 * <p>Thread-safety: used from the test thread; the sink and the log watch take calls from I/O threads.
 */
final class WorkerPortHarness implements AutoCloseable {
  /** How long anything the server owes us may take; generous for a shared 2-core machine. */
  static final Duration PATIENCE = Duration.ofSeconds(10);

  /**
   * Waits on a condition for at most {@link #PATIENCE}, looking every 2 ms from the start: Awaitility's
   * default first look after 100 ms would make each of the thousands of waits here cost that much.
   */
  static ConditionFactory soon() {
    return await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2));
  }

  final EventLog events = new EventLog();
  final WorkerServer server;
  private final LogWatch logs = new LogWatch();
  private final AtomicLong sequence = new AtomicLong();
  private final List<AutoCloseable> open = new CopyOnWriteArrayList<>();
  private final GoodSession sentinel;

  WorkerPortHarness() throws IOException {
    logs.attach();
    server = WorkerServer.start("127.0.0.1", 0, WorkerServer.Settings.builder()
        .maxFrameBytes(WireFuzz.MAX_FRAME_BYTES)
        .heartbeatInterval(Duration.ofSeconds(10))
        .detectionWindow(Duration.ofMinutes(10))
        .ioThreads(2)
        .build(), events);
    sentinel = joinGood();
  }

  /** A new raw connection, closed with the harness if the test does not close it first. */
  FuzzPeer connect() throws IOException {
    FuzzPeer peer = new FuzzPeer(server.port());
    open.add(peer);
    return peer;
  }

  /** A well-behaved worker, joined (Welcome received, workerJoined reported), with a fresh worker id. */
  GoodSession joinGood() throws IOException {
    String id = "good-" + sequence.incrementAndGet();
    int mark = events.size();
    FuzzPeer peer = connect();
    peer.send(Envelope.newBuilder().setHello(Hello.newBuilder().setWorkerId(id).setName(id + "-host").setSlots(2)
        .setVersion("fuzz")).build());
    WorkerHandle handle = soon().until(() -> events.joined(id, mark), h -> h != null);
    try {
      Envelope welcome = peer.next(PATIENCE);
      assertThat(welcome).as("Welcome to the well-behaved session %s", id).isNotNull();
      assertThat(welcome.getBodyCase()).isEqualTo(Envelope.BodyCase.WELCOME);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    return new GoodSession(peer, handle);
  }

  /** The server survived: the sentinel still works both ways and was never lost; the log shows no fault. */
  void checkHealthy() throws Exception {
    checkHealthy(0);
  }

  /** As {@link #checkHealthy()}, judging only events from index {@code from} on (see EventLog). */
  void checkHealthy(int from) throws Exception {
    sentinel.roundTrip();
    events.checkWellFormed(from);
    logs.assertClean();
  }

  @Override
  public void close() throws Exception {
    try {
      for (AutoCloseable c : open) {
        c.close();
      }
      server.close();
    } finally {
      logs.detach();
    }
  }

  /** A well-behaved session: an Assign sent through its handle comes back as a Result, and it stays live. */
  final class GoodSession {
    final FuzzPeer peer;
    final WorkerHandle handle;
    private boolean configured;

    GoodSession(FuzzPeer peer, WorkerHandle handle) {
      this.peer = peer;
      this.handle = handle;
    }

    /** Assigns one job, answers it with a PASS and waits for the report to reach the sink. */
    void roundTrip() throws InterruptedException {
      long jobId = sequence.incrementAndGet();
      long token = 1_000 + jobId;
      handle.assign(List.of(new Assignment(jobId, 1, token, 1, "case-" + jobId, "{\"id\":\"case-" + jobId + "\"}",
          new EvaluatorSpec("noop", Map.of(), Duration.ofSeconds(30)))));
      Envelope frame = peer.next(PATIENCE);
      if (!configured) {
        assertThat(frame).as("RunConfig to the well-behaved session %s", handle).isNotNull();
        assertThat(frame.getBodyCase()).isEqualTo(Envelope.BodyCase.RUN_CONFIG);
        configured = true;
        frame = peer.next(PATIENCE);
      }
      assertThat(frame).as("Assign to the well-behaved session %s", handle).isNotNull();
      assertThat(frame.getAssign().getJobId()).isEqualTo(jobId);
      assertThat(frame.getAssign().getToken()).isEqualTo(token);
      peer.send(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(jobId).setToken(token)
          .setOutcome(Outcome.newBuilder().setVerdict(dev.tally.protocol.Verdict.PASS).setDurationMillis(1))).build());
      AttemptReport want = AttemptReport.of(jobId, token, new dev.tally.core.Outcome(Verdict.PASS, null, "", 1)).withTiming(0, 1);
      soon().until(() -> events.of(handle).stream().anyMatch(e -> want.equals(e.report())));
      assertThat(events.lost(handle)).as("the well-behaved session %s was reported lost", handle).isFalse();
    }

    /** Ends the session cleanly; it must be lost exactly once, as "closed by peer". */
    void finish() throws Exception {
      assertThat(peer.finish(PATIENCE)).as("the server closes after our FIN").isTrue();
      soon().until(() -> events.lost(handle));
      assertThat(events.of(handle).stream().filter(e -> e.kind() == EventLog.Kind.LOST).map(EventLog.Event::reason))
          .containsExactly("closed by peer");
      peer.close();
    }
  }

  /** Collects ERROR events from anywhere and WARN events from Netty (but its EmbeddedChannel) while attached. */
  static final class LogWatch extends AppenderBase<ILoggingEvent> {
    private static final String[] QUIETED = {"dev.tally.coordinator.net", "io.netty"};
    private final List<String> faults = new CopyOnWriteArrayList<>();
    private final List<Level> savedLevels = new ArrayList<>();

    void attach() {
      for (String name : QUIETED) {
        Logger logger = (Logger) LoggerFactory.getLogger(name);
        savedLevels.add(logger.getLevel());
        logger.setLevel(name.startsWith("io.netty") ? Level.WARN : Level.ERROR);
      }
      setContext(((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).getLoggerContext());
      start();
      ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).addAppender(this);
    }

    void detach() {
      ((Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME)).detachAppender(this);
      stop();
      for (int i = 0; i < QUIETED.length; i++) {
        ((Logger) LoggerFactory.getLogger(QUIETED[i])).setLevel(savedLevels.get(i));
      }
    }

    @Override
    protected void append(ILoggingEvent e) {
      // EmbeddedChannel belongs to the in-memory decoder tests, whose shrinking may still run meanwhile.
      boolean netty = e.getLoggerName().startsWith("io.netty") && !e.getLoggerName().startsWith("io.netty.channel.embedded");
      if (e.getLevel().isGreaterOrEqual(Level.ERROR) || (netty && e.getLevel().isGreaterOrEqual(Level.WARN))) {
        faults.add(e.getLevel() + " " + e.getLoggerName() + ": " + e.getFormattedMessage()
            + (e.getThrowableProxy() != null ? " (" + e.getThrowableProxy().getClassName() + ": "
                + e.getThrowableProxy().getMessage() + ")" : ""));
      }
    }

    void assertClean() {
      assertThat(faults).as("errors logged by the server while fuzzed").isEmpty();
    }
  }
}
