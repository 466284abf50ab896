package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.tally.coordinator.net.CoreWorld.FakeConnection;
import dev.tally.coordinator.net.RecordingEvents.Event;
import dev.tally.coordinator.net.RecordingEvents.Kind;
import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AckStatus;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.HeldLease;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Drain;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.HeldJob;
import dev.tally.protocol.Hello;
import dev.tally.protocol.Result;
import dev.tally.protocol.Welcome;
import dev.tally.protocol.mapping.WireMapping;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.slf4j.LoggerFactory;

/**
 * The connection actor's decision core alone: driven by hand on one thread under a manual clock, through
 * a fake port (see {@link CoreWorld}). Every test ends by checking that the events kept the WorkerEvents
 * contract, unless it plants a fault to break it.
 */
class ConnectionCoreTest {
  private final CoreWorld world = new CoreWorld();
  private boolean contractBrokenOnPurpose;

  @AfterEach
  void theWorkerEventsContractHeld() {
    if (!contractBrokenOnPurpose) {
      world.events.verify();
    }
  }

  private List<Kind> kinds() {
    return world.recorded.events.stream().map(Event::kind).toList();
  }

  private static Assignment assignment(long jobId, long runId) {
    return new Assignment(jobId, runId, 100 + jobId, 1, "case-" + jobId, "{\"id\":\"case-" + jobId + "\"}",
        new EvaluatorSpec("noop", Map.of(), Duration.ofSeconds(30)));
  }

  /**
   * A port that requires a worker token: the Hello's credentials are checked before anything else it says,
   * a refusal carries the code that stops the worker, and refusals are logged once per address per minute.
   */
  @Nested
  class WorkerToken {
    private static final String TOKEN = "the-right-token-0123456789";
    private final CoreWorld tokenWorld = new CoreWorld(
        WorkerServer.Settings.builder().workerToken(dev.tally.core.security.Secret.of(TOKEN, "worker token (test)")), "store-a");
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(ConnectionCore.class);

    @AfterEach
    void detachAndVerify() {
      logger.detachAppender(logs);
      tokenWorld.events.verify();
    }

    private Envelope hello(String workerId, String credentials) {
      Envelope h = CoreWorld.hello(workerId, 2);
      return credentials == null ? h
          : h.toBuilder().setHello(h.getHello().toBuilder().setCredentials(credentials)).build();
    }

    private FakeConnection connectFrom(int host) {
      // CoreWorld numbers connections 10.0.0.1, .2, ...: make enough of them to reach the wanted address.
      FakeConnection c;
      do {
        c = tokenWorld.connect();
      } while (!c.core.peer().startsWith("/10.0.0." + host + ":"));
      return c;
    }

    @Test
    void aHelloWithTheTokenJoins() {
      FakeConnection c = tokenWorld.connect();
      c.receive(hello("w", TOKEN));
      assertThat(c.core.phase()).isEqualTo(ConnectionCore.Phase.JOINED);
      assertThat(tokenWorld.recorded.events).extracting(Event::kind).containsExactly(Kind.JOINED);
    }

    @Test
    void aHelloWithoutTheTokenOrWithAnotherIsRefusedWithTheCodeThatStopsTheWorker() {
      for (String presented : new String[] {null, "", "not-the-token", TOKEN + "x", TOKEN.substring(1)}) {
        FakeConnection c = tokenWorld.connect();
        c.receive(hello("w", presented));
        assertThat(c.writtenKinds()).as("presented %s", presented).containsExactly(Envelope.BodyCase.GOODBYE);
        Goodbye goodbye = c.last().getGoodbye();
        assertThat(goodbye.getCode()).isEqualTo(Goodbye.Code.UNAUTHENTICATED);
        assertThat(goodbye.getReason()).startsWith("Hello refused: ").doesNotContain(TOKEN);
        if (presented != null && !presented.isEmpty()) {
          assertThat(goodbye.getReason()).isEqualTo("Hello refused: wrong worker token").doesNotContain(presented);
        } else {
          assertThat(goodbye.getReason()).contains("requires a worker token", "--token-file", "TALLY_WORKER_TOKEN");
        }
        assertThat(c.closed).isTrue();
        assertThat(c.handle()).as("nothing registered").isNull();
        // Nothing else it says is looked at: its frames after the Hello change nothing.
        c.receive(CoreWorld.passResult(1, 1));
        c.end();
      }
      assertThat(tokenWorld.recorded.events).isEmpty();
      assertThat(tokenWorld.sessions.size()).isZero();
    }

    @Test
    void theTokenIsCheckedBeforeTheRestOfTheHello() {
      FakeConnection c = tokenWorld.connect();
      c.receive(Envelope.newBuilder().setHello(hello("", "wrong").getHello().toBuilder().setSlots(0)).build());
      assertThat(c.last().getGoodbye().getReason()).isEqualTo("Hello refused: wrong worker token");
    }

    @Test
    void refusalsAreLoggedOncePerAddressPerMinuteWithHowManyWereLeftOut() {
      logs.start();
      logger.addAppender(logs);
      FakeConnection first = connectFrom(1);
      first.receive(hello("w", "wrong"));
      FakeConnection other = connectFrom(2);
      other.receive(hello("w", "wrong"));
      assertThat(warnings()).hasSize(2);
      assertThat(warnings().get(0))
          .isEqualTo("refused a worker at /10.0.0.1:4000 (worker id 'w', name 'w-host'): wrong worker token");

      // CoreWorld's addresses are per connection; the log's key is the address without its port, so a
      // second connection from 10.0.0.1 is the same address only if it has that number: build one directly.
      for (int i = 0; i < 3; i++) {
        tokenWorld.advanceMillis(10_000);
        sameAddressAs(first).receive(hello("w", "wrong"));
      }
      assertThat(warnings()).as("left out within the minute").hasSize(2);
      tokenWorld.advanceMillis(31_000);
      sameAddressAs(first).receive(hello("w", "wrong"));
      assertThat(warnings()).hasSize(3);
      assertThat(warnings().get(2))
          .endsWith("wrong worker token; 3 more refusals from this address since the last line about it");
      assertThat(logs.list).allSatisfy(e -> assertThat(e.getFormattedMessage()).doesNotContain(TOKEN));
    }

    private List<String> warnings() {
      return logs.list.stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.WARN)
          .map(ILoggingEvent::getFormattedMessage).toList();
    }

    private FakeConnection sameAddressAs(FakeConnection c) {
      FakeConnection again = new FakeConnection(tokenWorld, 1, PlantedConnectionFault.NONE);
      again.core.onActive(tokenWorld.now());
      assertThat(RefusalLog.addressOf(again.core.peer())).isEqualTo(RefusalLog.addressOf(c.core.peer()));
      return again;
    }
  }

  @Nested
  class Hellos {
    @Test
    void aWelcomedWorkerIsReportedJoinedWithWhatItsHelloSaid() {
      FakeConnection c = world.connect();
      c.receive(CoreWorld.hello("w-1", 3));

      Welcome welcome = c.written.get(0).getWelcome();
      assertThat(welcome.getSessionId()).isEqualTo("session-1");
      assertThat(welcome.getHeartbeatIntervalMillis()).isEqualTo(CoreWorld.INTERVAL_MILLIS);
      assertThat(welcome.getStoreId()).isEqualTo("store-a");
      assertThat(c.flushedFrames).as("the Welcome is flushed").isEqualTo(1);
      assertThat(c.core.phase()).isEqualTo(ConnectionCore.Phase.JOINED);
      assertThat(kinds()).containsExactly(Kind.JOINED);
      RemoteWorker handle = c.handle();
      assertThat(world.recorded.events.get(0).worker()).isSameAs(handle);
      assertThat(handle.workerId()).isEqualTo("w-1");
      assertThat(handle.name()).isEqualTo("w-1-host");
      assertThat(handle.slots()).isEqualTo(3);
      assertThat(handle.dispatchWindow()).as("slots plus as many again").isEqualTo(6);
      assertThat(handle.acceptingWork()).isTrue();
      assertThat(world.sessions.live("w-1")).isSameAs(handle);
    }

    @Test
    void aFirstFrameThatIsNotHelloIsAnsweredWithGoodbyeAndClosedWithoutAnyEvent() {
      FakeConnection c = world.connect();
      c.receive(Envelope.newBuilder().setHeartbeat(dev.tally.protocol.Heartbeat.newBuilder().setSeq(1)).build());

      assertThat(c.last().getGoodbye().getReason()).isEqualTo("first frame must be Hello, got HEARTBEAT");
      assertThat(c.closed).isTrue();
      c.end();
      assertThat(world.recorded.events).isEmpty();
    }

    static Stream<Arguments> refusedHellos() {
      Hello ok = CoreWorld.hello("w", 1).getHello();
      return Stream.of(
          Arguments.of(ok.toBuilder().setWorkerId("").build(), "worker_id is empty"),
          Arguments.of(ok.toBuilder().setWorkerId("i".repeat(257)).build(), "worker_id and name must be at most 256 characters"),
          Arguments.of(ok.toBuilder().setName("n".repeat(257)).build(), "worker_id and name must be at most 256 characters"),
          Arguments.of(ok.toBuilder().setName("gpu\u001b[2J").build(), "name holds U+001B at character 4, a control character"),
          Arguments.of(ok.toBuilder().setWorkerId("w\u202e1").build(), "worker_id holds U+202E at character 2, an invisible format"
              + " character (a bidirectional override, a zero-width space or the like, which makes one name look like another)"),
          Arguments.of(ok.toBuilder().setSlots(0).build(), "slots must be between 1 and 4096, got 0"),
          Arguments.of(ok.toBuilder().setSlots(4_097).build(), "slots must be between 1 and 4096, got 4097"),
          Arguments.of(ok.toBuilder().setSlots(-1).build(), "slots must be between 1 and 4096, got 4294967295"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("refusedHellos")
    void aHelloBreakingARuleIsRefusedWithTheRuleAndNothingIsRegistered(Hello hello, String problem) {
      FakeConnection c = world.connect();
      c.receive(Envelope.newBuilder().setHello(hello).build());

      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.GOODBYE);
      assertThat(c.last().getGoodbye().getReason()).isEqualTo("Hello refused: " + problem);
      assertThat(c.closed).isTrue();
      assertThat(c.handle()).isNull();
      c.end();
      assertThat(world.recorded.events).isEmpty();
      assertThat(world.sessions.size()).isZero();
    }

    @Test
    void aHelloAtTheLimitsIsAccepted() {
      FakeConnection c = world.connect();
      c.receive(Envelope.newBuilder().setHello(Hello.newBuilder().setWorkerId("i".repeat(256))
          .setName("n".repeat(256)).setSlots(WorkerServer.MAX_WORKER_SLOTS)).build());
      assertThat(c.core.phase()).isEqualTo(ConnectionCore.Phase.JOINED);
    }

    @Test
    void heldLeasesAreClaimedOnlyFromTheCoordinatorsOwnStore() {
      Envelope hello = CoreWorld.hello("w", 1);
      HeldJob held = HeldJob.newBuilder().setJobId(3).setToken(1).build();
      FakeConnection fromA = world.connect();
      fromA.receive(hello.toBuilder().setHello(hello.getHello().toBuilder().setStoreId("store-a").addHeld(held)).build());
      FakeConnection fromB = world.connect();
      fromB.receive(hello.toBuilder().setHello(hello.getHello().toBuilder().setWorkerId("v").setStoreId("store-b")
          .addHeld(held)).build());

      assertThat(fromA.handle().heldAtJoin()).containsExactly(new HeldLease(3, 1));
      assertThat(fromB.handle().heldAtJoin()).as("job 3 token 1 of store-b is another job here").isEmpty();
    }

    @Test
    void aSecondHelloOnALiveSessionClosesIt() {
      FakeConnection c = world.joined("twice", 1);
      c.receive(CoreWorld.hello("twice", 1));
      c.end();
      assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason)
          .isEqualTo("second Hello on a live session");
    }

    @Test
    void framesBeforeTheConnectionIsActiveAreAProgrammingError() {
      FakeConnection c = new FakeConnection(world, 99, PlantedConnectionFault.NONE);
      assertThatThrownBy(() -> c.receive(CoreWorld.hello("w", 1)))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("call onActive first");
      c.core.onActive(world.now());
      assertThatThrownBy(() -> c.core.onActive(world.now())).isInstanceOf(IllegalStateException.class);
    }
  }

  @Nested
  class Superseding {
    @Test
    void aNewSessionJoinsOnlyAfterTheSupersededOneWasReportedLostAndThenHandlesWhatItHeld() {
      FakeConnection first = world.joined("w", 1);
      FakeConnection second = world.connect();

      second.receive(CoreWorld.hello("w", 1));

      assertThat(first.last().getGoodbye().getReason()).isEqualTo("superseded by a new session");
      assertThat(first.closed).isTrue();
      assertThat(second.core.phase()).isEqualTo(ConnectionCore.Phase.JOINING);
      assertThat(second.readingPaused).isTrue();
      assertThat(second.written).as("no Welcome before the old session is lost").isEmpty();

      second.receive(CoreWorld.passResult(3, 30)); // an outbox replay pipelined after the Hello
      second.receive(Envelope.newBuilder().setDrain(Drain.newBuilder().setReason("stopping")).build());
      assertThat(kinds()).as("held, not handled").containsExactly(Kind.JOINED);
      assertThat(second.awaitedPredecessor.toCompletableFuture()).isNotDone();

      first.end();
      assertThat(second.awaitedPredecessor.toCompletableFuture()).isDone();
      second.predecessorEnded();

      assertThat(kinds()).containsExactly(Kind.JOINED, Kind.LOST, Kind.JOINED, Kind.ENDED);
      assertThat(world.recorded.lost(first.handle())).singleElement().extracting(Event::reason)
          .isEqualTo("superseded by a new session");
      assertThat(world.recorded.reports(second.handle())).extracting(AttemptReport::jobId).containsExactly(3L);
      assertThat(second.handle().acceptingWork()).as("the held Drain was handled too").isFalse();
      assertThat(second.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME);
      assertThat(second.readingPaused).isFalse();
      assertThat(world.sessions.live("w")).isSameAs(second.handle());
    }

    @Test
    void aThirdSessionWaitsForTheFirstToBeLostWhileTheSecondIsStillJoining() {
      FakeConnection first = world.joined("w", 1);
      FakeConnection second = world.connect();
      second.receive(CoreWorld.hello("w", 1));
      FakeConnection third = world.connect();

      third.receive(CoreWorld.hello("w", 1));

      assertThat(second.last().getGoodbye().getReason()).isEqualTo("superseded by a new session");
      second.end();
      assertThat(third.awaitedPredecessor.toCompletableFuture())
          .as("the second never joined, but the first it superseded is not lost yet").isNotDone();
      assertThat(third.written).isEmpty();

      first.end();
      assertThat(third.awaitedPredecessor.toCompletableFuture()).isDone();
      third.predecessorEnded();
      // The second may still be told its own predecessor ended: it closed meanwhile, and must not join.
      second.core.onPredecessorEnded(world.now());

      assertThat(kinds()).containsExactly(Kind.JOINED, Kind.LOST, Kind.JOINED);
      assertThat(world.recorded.events.get(2).worker()).isSameAs(third.handle());
      assertThat(second.written).as("the second is never welcomed").extracting(Envelope::getBodyCase)
          .containsExactly(Envelope.BodyCase.GOODBYE);
    }

    @Test
    void aSessionThatEndsBeforeJoiningGivesTheWorkerBackToTheSessionItSuperseded() {
      FakeConnection first = world.joined("w", 1);
      FakeConnection second = world.connect();
      second.receive(CoreWorld.hello("w", 1));

      second.end(); // its peer went away while the first one was still closing

      assertThat(world.sessions.live("w")).as("the first is live until its loss is reported")
          .isSameAs(first.handle());
      FakeConnection third = world.connect();
      third.receive(CoreWorld.hello("w", 1));
      assertThat(third.awaitedPredecessor.toCompletableFuture()).isNotDone();
      first.end();
      third.predecessorEnded();
      assertThat(kinds()).containsExactly(Kind.JOINED, Kind.LOST, Kind.JOINED);
      assertThat(world.recorded.events.get(2).worker()).isSameAs(third.handle());
    }

    @Test
    void aWorkerJoiningUnderANameAnotherLiveWorkerHasIsToldSoInItsWelcomeAndStillJoins() {
      FakeConnection first = world.connect();
      first.receive(named("id-1", "gpu-box"));
      assertThat(first.written.get(0).getWelcome().getNoticesList()).as("the first of a name is told nothing").isEmpty();

      FakeConnection second = world.connect();
      second.receive(named("id-2", "gpu-box"));
      assertThat(second.written.get(0).getWelcome().getNoticesList()).singleElement().asString()
          .contains("already goes by the name 'gpu-box'").contains(first.core.peer()).contains("--name");
      assertThat(second.core.phase()).isEqualTo(ConnectionCore.Phase.JOINED);
      assertThat(first.closed).as("a name is not an identity: nobody is superseded").isFalse();

      first.core.close("gone");
      first.end();
      FakeConnection third = world.connect();
      third.receive(named("id-3", "cpu-box"));
      assertThat(third.written.get(0).getWelcome().getNoticesList()).isEmpty();
      FakeConnection fourth = world.connect();
      fourth.receive(named("id-4", "gpu-box"));
      assertThat(fourth.written.get(0).getWelcome().getNoticesList()).as("id-2 still has the name").hasSize(1);
    }

    private static Envelope named(String workerId, String name) {
      return Envelope.newBuilder().setHello(dev.tally.protocol.Hello.newBuilder().setWorkerId(workerId).setName(name)
          .setSlots(1).setVersion("test")).build();
    }

    @Test
    void aSessionOfAnotherWorkerIsNeverSuperseded() {
      FakeConnection a = world.joined("a", 1);
      FakeConnection b = world.joined("b", 1);
      assertThat(a.closed).isFalse();
      assertThat(b.core.phase()).isEqualTo(ConnectionCore.Phase.JOINED);
      assertThat(kinds()).containsExactly(Kind.JOINED, Kind.JOINED);
    }

    @Test
    void aSessionWaitingToJoinRefusesAPeerThatIgnoresThePauseInsteadOfHoldingWithoutBound() {
      world.joined("w", 1);
      FakeConnection second = world.connect();
      second.receive(CoreWorld.hello("w", 1));
      Envelope beat = Envelope.newBuilder().setHeartbeat(dev.tally.protocol.Heartbeat.newBuilder().setSeq(1)).build();

      for (int i = 0; i < ConnectionCore.MAX_FRAMES_HELD_WHILE_JOINING; i++) {
        second.receive(beat);
      }
      assertThat(second.closed).isFalse();
      second.receive(beat);

      assertThat(second.closed).isTrue();
      assertThat(second.last().getGoodbye().getReason())
          .isEqualTo("more than " + ConnectionCore.MAX_FRAMES_HELD_WHILE_JOINING + " frames before its Welcome");
    }
  }

  @Nested
  class Reports {
    @Test
    void resultsBecomeAttemptEndedInOrder() {
      FakeConnection c = world.joined("w", 2);
      c.receive(CoreWorld.passResult(1, 10));
      c.receive(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(2).setToken(11)
          .setFailure(dev.tally.protocol.InfraFailure.newBuilder()
              .setKind(dev.tally.protocol.InfraFailure.Kind.TIMEOUT).setDetail("ran past 30000ms"))).build());

      assertThat(world.recorded.reports(c.handle())).containsExactly(
          AttemptReport.of(1, 10, new dev.tally.core.Outcome(dev.tally.core.Verdict.PASS, null, "", 1)).withTiming(0, 1),
          AttemptReport.failed(2, 11, new InfraFailure(InfraFailure.Kind.TIMEOUT, "ran past 30000ms")).withTiming(0, 0));
      assertThat(c.closed).isFalse();
    }

    @Test
    void aJournalEntryReachesTheSchedulerAndOneOverTheJournalsLimitIsAMalformedFrame() {
      FakeConnection c = world.joined("w", 1);
      c.receive(Envelope.newBuilder().setJournalEntry(dev.tally.protocol.JournalEntry.newBuilder().setJobId(3)
          .setToken(7).setRequestDigest("ab12").setResponse("{}")).build());
      assertThat(world.recorded.journalled).containsExactly(new dev.tally.core.JournalEntry(3, 7, "ab12", "{}"));
      assertThat(c.closed).isFalse();

      c.receive(Envelope.newBuilder().setJournalEntry(dev.tally.protocol.JournalEntry.newBuilder().setJobId(3)
          .setToken(7).setRequestDigest("cd34")
          .setResponse("x".repeat(dev.tally.core.JournalEntry.MAX_RESPONSE_BYTES + 1))).build());
      c.end();
      assertThat(world.recorded.journalled).hasSize(1);
      assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason).asString()
          .startsWith("malformed frame: journal entry for job 3: response is 1048577 bytes, above the journal's limit");
    }

    @Test
    void aResultWithNeitherOutcomeNorFailureIsAMalformedFrame() {
      FakeConnection c = world.joined("w", 1);
      c.receive(Envelope.newBuilder().setResult(Result.newBuilder().setJobId(9).setToken(1)).build());
      c.end();
      assertThat(world.recorded.reports(c.handle())).isEmpty();
      assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason)
          .isEqualTo("malformed frame: Result for job 9 (token 1) has neither outcome nor failure");
    }

    @Test
    void aWorkersGoodbyeEndsTheSessionWithItsReasonClippedAndNoGoodbyeBack() {
      FakeConnection c = world.joined("w", 1);
      c.receive(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("x".repeat(300))).build());
      assertThat(c.closed).isTrue();
      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME);
      c.end();
      assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason)
          .isEqualTo("worker said goodbye: " + "x".repeat(200) + "...");
    }

    @Test
    void anAssignFromAWorkerIsRefused() {
      FakeConnection c = world.joined("confused", 1);
      c.receive(Envelope.newBuilder().setAssign(Assign.newBuilder().setJobId(1)).build());
      assertThat(c.last().getGoodbye().getReason()).isEqualTo("unexpected ASSIGN from a worker");
      c.end();
      assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason)
          .isEqualTo("unexpected ASSIGN from a worker");
    }

    @Test
    void aClosedSessionIgnoresTheFramesThatStillReachIt() {
      FakeConnection first = world.joined("w", 1);
      FakeConnection second = world.connect();
      second.receive(CoreWorld.hello("w", 1));
      first.receive(CoreWorld.passResult(1, 10)); // read before the close took effect
      first.end();
      first.receive(CoreWorld.passResult(2, 20)); // in flight when it closed

      assertThat(world.recorded.reports(first.handle())).isEmpty();
      assertThat(world.recorded.lost(first.handle())).hasSize(1);
    }
  }

  @Nested
  class WorkerDrain {
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(ConnectionCore.class);

    @AfterEach
    void detach() {
      logger.detachAppender(logs);
    }

    @Test
    void aWorkerThatSaysDrainGetsNoNewWorkForTheRestOfItsSessionAndIsLoggedOnce() {
      logs.start();
      logger.addAppender(logs);
      FakeConnection c = world.joined("w", 1);
      RemoteWorker handle = c.handle();
      assertThat(handle.acceptingWork()).isTrue();

      c.receive(Envelope.newBuilder().setDrain(Drain.newBuilder().setReason("SIGTERM")).build());
      c.receive(Envelope.newBuilder().setDrain(Drain.newBuilder().setReason("SIGTERM again")).build());
      world.advanceMillis(CoreWorld.CHECK_MILLIS);
      c.check(); // heard from just now: not suspected, and still draining

      assertThat(handle.acceptingWork()).isFalse();
      assertThat(handle.workerDraining()).isTrue();
      assertThat(c.closed).as("a draining worker keeps its session").isFalse();
      c.receive(CoreWorld.passResult(1, 10));
      assertThat(world.recorded.reports(handle)).as("its results still count").hasSize(1);
      assertThat(logs.list).filteredOn(e -> e.getFormattedMessage().contains("is draining"))
          .singleElement().extracting(ILoggingEvent::getFormattedMessage)
          .isEqualTo("worker w (w-host) is draining: SIGTERM; it gets no new jobs for the rest of this session");

      c.receive(Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("drained")).build());
      c.end();
      FakeConnection next = world.joined("w", 1);
      assertThat(next.handle().acceptingWork()).as("a Drain belongs to the session that said it").isTrue();
    }

    @Test
    void aDrainBeforeHelloIsRefused() {
      FakeConnection c = world.connect();
      c.receive(Envelope.newBuilder().setDrain(Drain.getDefaultInstance()).build());
      assertThat(c.last().getGoodbye().getReason()).isEqualTo("first frame must be Hello, got DRAIN");
    }
  }

  @Nested
  class Liveness {
    @Test
    void aSilentWorkerIsDrainedThenReapedAndHeardFromAgainBeforeThat() {
      FakeConnection c = world.joined("w", 1);
      RemoteWorker handle = c.handle();

      for (int i = 0; i < 6; i++) { // 600 ms of silence: 0.6 of the window, the drain level
        world.advanceMillis(CoreWorld.CHECK_MILLIS);
        c.check();
      }
      assertThat(handle.acceptingWork()).isFalse();
      assertThat(handle.suspicion()).isEqualTo("0.60 of 1.00");

      c.receive(CoreWorld.passResult(1, 1)); // heard from
      world.advanceMillis(CoreWorld.CHECK_MILLIS);
      c.check();
      assertThat(handle.acceptingWork()).isTrue();
      assertThat(handle.suspicion()).isEqualTo("0.10 of 1.00");

      for (int i = 0; i < 8; i++) { // 900 ms since the result: not yet
        world.advanceMillis(CoreWorld.CHECK_MILLIS);
        c.check();
      }
      assertThat(c.closed).isFalse();
      world.advanceMillis(CoreWorld.CHECK_MILLIS);
      c.check();

      assertThat(c.closed).isTrue();
      String reason = c.last().getGoodbye().getReason();
      assertThat(reason).startsWith("reaped after 1000ms of silence (");
      c.end();
      assertThat(world.recorded.lost(handle)).singleElement().extracting(Event::reason).isEqualTo(reason);
    }

    @Test
    void aCheckThatComesLateDoesNotJudgeButTheNextOneDoes() {
      FakeConnection c = world.joined("w", 1);
      world.advanceMillis(CoreWorld.CHECK_MILLIS);
      c.check();

      // This process stops for 3 s: the next check comes 30 periods late, the worker's frames unread.
      world.advanceMillis(3_000);
      c.check();
      assertThat(c.closed).as("a late check does not judge").isFalse();

      c.receive(CoreWorld.passResult(1, 1)); // what the worker sent meanwhile, read now
      world.advanceMillis(CoreWorld.CHECK_MILLIS);
      c.check();
      assertThat(c.closed).isFalse();
      assertThat(c.handle().acceptingWork()).isTrue();
    }

    @Test
    void aLateCheckOnlyPostponesTheVerdictByOnePeriod() {
      FakeConnection c = world.joined("w", 1);
      world.advanceMillis(CoreWorld.WINDOW_MILLIS + CoreWorld.CHECK_MILLIS); // silent a whole window, but late
      c.check();
      assertThat(c.closed).isFalse();
      world.advanceMillis(CoreWorld.CHECK_MILLIS);
      c.check();
      assertThat(c.closed).as("the worker really was silent").isTrue();
      assertThat(c.last().getGoodbye().getReason()).startsWith("reaped after 1200ms of silence");
    }

    @Test
    void aCheckExactlyLateChecksPeriodsAfterThePreviousOneStillJudges() {
      FakeConnection c = world.joined("w", 1);
      world.advanceMillis(CoreWorld.CHECK_MILLIS * ConnectionCore.LATE_CHECKS); // 500 ms: on time, just
      c.check();
      world.advanceMillis(CoreWorld.CHECK_MILLIS * ConnectionCore.LATE_CHECKS);
      c.check();
      assertThat(c.closed).isTrue();
    }

    @Test
    void aPeerThatNeverSaysHelloIsReapedWithoutAnyEvent() {
      FakeConnection c = world.connect();
      for (int i = 0; i < 10; i++) {
        world.advanceMillis(CoreWorld.CHECK_MILLIS);
        c.check();
      }
      assertThat(c.closed).isTrue();
      c.end();
      assertThat(world.recorded.events).isEmpty();
    }
  }

  @Nested
  class Heartbeats {
    private Envelope.BodyCase lastKind(FakeConnection c) {
      return c.last().getBodyCase();
    }

    @Test
    void theCoordinatorHeartbeatsOnlyAfterHalfAnIntervalWithNothingElseWritten() {
      FakeConnection c = world.joined("w", 1); // the Welcome is the last write
      world.advanceMillis(CoreWorld.INTERVAL_MILLIS / 2 - 1);
      c.tick();
      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME);

      world.advanceMillis(1);
      c.tick();
      assertThat(lastKind(c)).isEqualTo(Envelope.BodyCase.HEARTBEAT);
      assertThat(c.last().getHeartbeat().getSeq()).isEqualTo(1);
      assertThat(c.flushedFrames).isEqualTo(c.written.size());

      // Busy: acks and assignments carry the proof of life instead.
      world.advanceMillis(CoreWorld.INTERVAL_MILLIS);
      c.handle().acknowledge(List.of(new Ack(1, 1, AckStatus.RECORDED)));
      world.advanceMillis(CoreWorld.INTERVAL_MILLIS / 2 - 1);
      c.tick();
      assertThat(lastKind(c)).isEqualTo(Envelope.BodyCase.RESULT_ACK);
      world.advanceMillis(1);
      c.handle().assign(List.of(assignment(1, 1)));
      world.advanceMillis(CoreWorld.INTERVAL_MILLIS / 2 - 1);
      c.tick();
      assertThat(lastKind(c)).isEqualTo(Envelope.BodyCase.ASSIGN);

      world.advanceMillis(1);
      c.tick();
      assertThat(lastKind(c)).isEqualTo(Envelope.BodyCase.HEARTBEAT);
      assertThat(c.last().getHeartbeat().getSeq()).isEqualTo(2);
    }

    @Test
    void aSweepGivesEachDueHeartbeatTickOnceAndAtMostOneSweepLate() {
      long interval = CoreWorld.INTERVAL_MILLIS;
      FakeConnection c = world.joined("w", 1); // active and welcomed now: the first tick falls due an interval on
      world.advanceMillis(interval - 1);
      c.sweep();
      assertThat(heartbeats(c)).isZero();
      world.advanceMillis(1);
      c.sweep();
      assertThat(heartbeats(c)).as("the first tick, on time").isEqualTo(1);

      world.advanceMillis(interval + 60);
      c.sweep();
      assertThat(heartbeats(c)).as("the second tick, by the first sweep after it fell due").isEqualTo(2);

      // Four intervals without a sweep (a paused process): one tick, not a burst of four.
      world.advanceMillis(4 * interval);
      c.sweep();
      c.sweep();
      assertThat(heartbeats(c)).isEqualTo(3);
      world.advanceMillis(interval - 1);
      c.sweep();
      assertThat(heartbeats(c)).as("the next tick falls due an interval after the late one").isEqualTo(3);
      world.advanceMillis(1);
      c.sweep();
      assertThat(heartbeats(c)).isEqualTo(4);
    }

    private long heartbeats(FakeConnection c) {
      return c.writtenKinds().stream().filter(k -> k == Envelope.BodyCase.HEARTBEAT).count();
    }

    @Test
    void noHeartbeatBeforeJoiningNorAfterClosing() {
      FakeConnection waiting = world.connect();
      world.advanceMillis(CoreWorld.INTERVAL_MILLIS);
      waiting.tick();
      assertThat(waiting.written).as("awaiting Hello").isEmpty();

      FakeConnection first = world.joined("w", 1);
      FakeConnection joining = world.connect();
      joining.receive(CoreWorld.hello("w", 1));
      world.advanceMillis(CoreWorld.INTERVAL_MILLIS);
      joining.tick();
      assertThat(joining.written).as("joining").isEmpty();

      first.tick();
      assertThat(first.writtenKinds()).as("closed").containsExactly(Envelope.BodyCase.WELCOME, Envelope.BodyCase.GOODBYE);
    }
  }

  @Nested
  class Ends {
    @Test
    void workerLostIsReportedExactlyOnceWithTheFirstReason() {
      FakeConnection c = world.joined("once", 1);
      c.handle().close("first");
      c.handle().close("second");
      c.core.onError(ConnectionCore.ErrorKind.MALFORMED_FRAME, new IllegalStateException("after the end"));
      c.end();
      c.end();
      c.core.onInactive(true);

      assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason)
          .isEqualTo("closed by coordinator: first");
      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME, Envelope.BodyCase.GOODBYE);
      assertThat(world.sessions.live("once")).isNull();
    }

    @Test
    void aSessionThatNeverJoinedIsNeverReportedLost() {
      world.joined("w", 1);
      FakeConnection joining = world.connect();
      joining.receive(CoreWorld.hello("w", 1));
      joining.core.close("changed my mind");
      joining.end();
      assertThat(kinds()).containsExactly(Kind.JOINED);
    }

    @Test
    void aCloseThePeerMadeIsClosedByPeerAndOneTheServerMadeIsCoordinatorShuttingDown() {
      FakeConnection byPeer = world.joined("a", 1);
      FakeConnection byServer = world.joined("b", 1);
      byPeer.end();
      byServer.core.onInactive(true);
      assertThat(world.recorded.lost(byPeer.handle()).get(0).reason()).isEqualTo("closed by peer");
      assertThat(world.recorded.lost(byServer.handle()).get(0).reason()).isEqualTo("coordinator shutting down");
    }

    @Test
    void errorsBelowTheCoreCloseWithTheirReasonAndOnlyAnIoErrorWithoutGoodbye() {
      Map<ConnectionCore.ErrorKind, Throwable> causes = Map.of(
          ConnectionCore.ErrorKind.MALFORMED_FRAME, new IllegalArgumentException("bad length"),
          ConnectionCore.ErrorKind.CANNOT_SEND, new IllegalArgumentException("too large"),
          ConnectionCore.ErrorKind.IO_ERROR, new IOException("connection reset"),
          ConnectionCore.ErrorKind.INTERNAL, new IllegalStateException("boom"));
      Map<ConnectionCore.ErrorKind, String> reasons = Map.of(
          ConnectionCore.ErrorKind.MALFORMED_FRAME, "malformed frame: bad length",
          ConnectionCore.ErrorKind.CANNOT_SEND, "cannot send: too large",
          ConnectionCore.ErrorKind.IO_ERROR, "I/O error: connection reset",
          ConnectionCore.ErrorKind.INTERNAL, "internal error: java.lang.IllegalStateException: boom");
      for (ConnectionCore.ErrorKind kind : ConnectionCore.ErrorKind.values()) {
        FakeConnection c = world.joined("w-" + kind, 1);
        c.core.onError(kind, causes.get(kind));
        assertThat(c.closed).as("%s closes", kind).isTrue();
        assertThat(c.last().getBodyCase()).as("%s says goodbye", kind)
            .isEqualTo(kind == ConnectionCore.ErrorKind.IO_ERROR ? Envelope.BodyCase.WELCOME : Envelope.BodyCase.GOODBYE);
        c.end();
        assertThat(world.recorded.lost(c.handle())).singleElement().extracting(Event::reason).isEqualTo(reasons.get(kind));
      }
    }

    @Test
    void aWelcomeThatCannotBeSentRefusesTheSessionWithoutAJoin() {
      FakeConnection c = world.connect();
      c.unsendable = Envelope::hasWelcome;
      c.receive(CoreWorld.hello("w", 1));
      c.end();
      assertThat(world.recorded.events).isEmpty();
      assertThat(c.last().getGoodbye().getReason()).isEqualTo("cannot send: frame too large");
      assertThat(world.sessions.live("w")).isNull();
    }

    @Test
    void aPortThatReportsTheEndFromWithinCloseIsFine() {
      FakeConnection c = world.joined("w", 1);
      c.endOnClose = true;
      c.receive(Envelope.newBuilder().setAssign(Assign.getDefaultInstance()).build());
      c.receive(CoreWorld.passResult(1, 1));
      assertThat(kinds()).containsExactly(Kind.JOINED, Kind.LOST);
    }
  }

  @Nested
  class Assignments {
    @Test
    void aRunConfigGoesOutOncePerRunPerSessionBeforeItsFirstAssign() {
      FakeConnection c = world.joined("w", 2);
      c.handle().assign(List.of(assignment(1, 1), assignment(2, 1)));
      c.handle().assign(List.of(assignment(3, 2), assignment(4, 1)));

      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME,
          Envelope.BodyCase.RUN_CONFIG, Envelope.BodyCase.ASSIGN, Envelope.BodyCase.ASSIGN,
          Envelope.BodyCase.RUN_CONFIG, Envelope.BodyCase.ASSIGN, Envelope.BodyCase.ASSIGN);
      assertThat(c.written.get(4).getRunConfig().getRunId()).isEqualTo(2);
      assertThat(c.flushedFrames).isEqualTo(c.written.size());

      c.end();
      FakeConnection next = world.joined("w", 1); // a new session of the same worker is configured afresh
      next.handle().assign(List.of(assignment(5, 1)));
      assertThat(next.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME, Envelope.BodyCase.RUN_CONFIG,
          Envelope.BodyCase.ASSIGN);
    }

    @Test
    void aRunForgottenPastTheLimitIsConfiguredAgain() {
      FakeConnection c = world.joined("w", 1);
      c.handle().assign(List.of(assignment(1, 0)));
      c.handle().assign(IntStream.rangeClosed(1, ConnectionCore.MAX_RUN_CONFIGS_PER_SESSION)
          .mapToObj(run -> assignment(1_000 + run, run)).toList());
      int before = c.written.size();
      c.handle().assign(List.of(assignment(2, 0)));
      assertThat(c.written.subList(before, c.written.size())).extracting(Envelope::getBodyCase)
          .containsExactly(Envelope.BodyCase.RUN_CONFIG, Envelope.BodyCase.ASSIGN);
    }

    @Test
    void anAssignmentTooLargeForAFrameIsReportedFailedInsteadOfSent() {
      CoreWorld small = new CoreWorld(WorkerServer.Settings.builder().maxFrameBytes(1_024), "");
      FakeConnection c = small.joined("w", 1);
      Assignment huge = new Assignment(1, 1, 10, 1, "big", "x".repeat(2_000),
          new EvaluatorSpec("noop", Map.of(), Duration.ofSeconds(1)));

      c.handle().assign(List.of(huge, assignment(2, 1)));

      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME, Envelope.BodyCase.RUN_CONFIG,
          Envelope.BodyCase.ASSIGN);
      assertThat(c.last().getAssign().getJobId()).isEqualTo(2);
      AttemptReport report = small.recorded.reports(c.handle()).get(0);
      assertThat(report.jobId()).isEqualTo(1);
      assertThat(report.token()).isEqualTo(10);
      assertThat(report.failure().kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
      int size = Envelope.newBuilder().setAssign(WireMapping.toWire(huge)).build().getSerializedSize();
      assertThat(report.failure().detail())
          .isEqualTo("case \"big\" is " + size + " bytes on the wire, above the frame limit of 1024 bytes");
      assertThat(small.recorded.lost(c.handle())).isEmpty();
      small.events.verify();
    }

    @Test
    void whatIsSentOnAClosedSessionIsDropped() {
      FakeConnection c = world.joined("w", 1);
      c.end();
      c.handle().assign(List.of(assignment(1, 1)));
      c.handle().acknowledge(List.of(new Ack(1, 1, AckStatus.RECORDED)));
      c.handle().abandon(1, 1, "revoked");
      assertThat(c.writtenKinds()).containsExactly(Envelope.BodyCase.WELCOME);
    }
  }

  @Nested
  class PlantedFaults {
    /** One worker's session superseded by its next, and a Result that reaches the old one after its loss. */
    private void supersedeAndSendToTheOldSession(PlantedConnectionFault planted) {
      FakeConnection first = world.connect(planted);
      first.receive(CoreWorld.hello("w", 1));
      FakeConnection second = world.connect(planted);
      second.receive(CoreWorld.hello("w", 1));
      first.end();
      if (second.awaitedPredecessor != null) {
        second.predecessorEnded();
      }
      first.receive(CoreWorld.passResult(1, 10)); // in flight when the first session closed
    }

    @Test
    void theCheckerCatchesAResultAcceptedFromASupersededSession() {
      contractBrokenOnPurpose = true;
      supersedeAndSendToTheOldSession(PlantedConnectionFault.ACCEPT_RESULT_FROM_SUPERSEDED_SESSION);

      assertThat(world.events.violations()).singleElement().asString()
          .contains("attemptEnded after workerLost", "RemoteWorker[w 'w-host' at /10.0.0.1:4000]");
      assertThatThrownBy(world.events::verify).isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("1 of 4 worker events broke the WorkerEvents contract");
    }

    @Test
    void theCheckerCatchesASessionJoiningBeforeItsPredecessorWasLost() {
      contractBrokenOnPurpose = true;
      supersedeAndSendToTheOldSession(PlantedConnectionFault.JOIN_BEFORE_PREDECESSOR_LOST);

      assertThat(world.events.violations()).singleElement().asString()
          .contains("joined while worker 'w' already had a joined session not yet lost");
    }

    @Test
    void theSameScriptKeepsTheContractWithNoFaultPlanted() {
      supersedeAndSendToTheOldSession(PlantedConnectionFault.NONE);
      assertThat(world.events.violations()).isEmpty();
      assertThat(kinds()).containsExactly(Kind.JOINED, Kind.LOST, Kind.JOINED);
    }
  }
}
