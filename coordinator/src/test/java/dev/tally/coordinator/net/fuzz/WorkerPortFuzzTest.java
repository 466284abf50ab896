package dev.tally.coordinator.net.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.coordinator.net.fuzz.EventLog.Event;
import dev.tally.coordinator.net.fuzz.EventLog.Kind;
import dev.tally.coordinator.net.fuzz.ReferenceModel.Expected;
import dev.tally.coordinator.net.fuzz.WorkerPortHarness.GoodSession;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.core.schedule.WorkerHandle;
import dev.tally.protocol.Envelope;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * The coordinator's worker port under fuzzed sessions, over real sockets to one real {@code WorkerServer}
 * per property (see {@link WorkerPortHarness}). Every try:
 *
 * <ol>
 *   <li>joins a well-behaved session first;
 *   <li>plays a generated script on a second connection (garbage, cut and oversized frames, well-formed
 *       but wrong messages, lawful traffic, pauses), then half-closes it;
 *   <li>checks that the server closed that connection, that the sink heard from it exactly what
 *       {@link ReferenceModel} prescribes (joined or not, every report, one loss with the right reason);
 *   <li>checks that the well-behaved session still works both ways (an Assign through its handle arrives,
 *       its Result reaches the sink) and was never lost, and that the server logged no internal error.
 * </ol>
 */
@AddLifecycleHook(FuzzBudget.class)
class WorkerPortFuzzTest {
  private WorkerPortHarness harness;

  @BeforeProperty
  void startServer() throws Exception {
    harness = new WorkerPortHarness();
  }

  @AfterProperty
  void stopServer() throws Exception {
    try {
      harness.checkHealthy();
    } finally {
      harness.close();
    }
  }

  @Property(tries = 600)
  void aFuzzedSessionGetsExactlyTheEventsTheProtocolPrescribesAndDisturbsNoOtherSession(
      @ForAll("sessions") List<Step> script) throws Exception {
    playAndCheck(script);
  }

  @Property(tries = 400)
  void garbageOnTheWorkerPortClosesOnlyThatConnection(@ForAll("garbage") List<Step> script) throws Exception {
    playAndCheck(script);
  }

  @Property(tries = 100)
  void anOversizedLengthPrefixClosesTheConnectionBeforeItsBodyIsSent(
      @ForAll("joinedOrNot") boolean joinFirst, @ForAll("oversized") Step prefix) throws Exception {
    int mark = harness.events.size();
    GoodSession good = harness.joinGood();
    FuzzPeer peer = harness.connect();
    List<Step> script = new ArrayList<>();
    if (joinFirst) {
      script.add(new Step.Frame(Envelope.newBuilder().setHello(dev.tally.protocol.Hello.newBuilder()
          .setWorkerId("fuzz-a").setName("fuzz-host").setSlots(1)).build(), "valid HELLO"));
    }
    script.add(prefix);
    for (Step s : script) {
      peer.perform(s);
    }

    // No FIN and not one byte more: the prefix alone must end the connection.
    assertThat(peer.awaitEnded(WorkerPortHarness.PATIENCE)).as("closed on the prefix alone").isTrue();
    if (joinFirst) {
      WorkerHandle fuzz = WorkerPortHarness.soon()
          .until(() -> harness.events.joined("fuzz-a", mark), h -> h != null && harness.events.lost(h));
      Expected want = ReferenceModel.expect(ReferenceModel.decode(ReferenceModel.wire(script), WireFuzz.MAX_FRAME_BYTES));
      assertSessionMatches(fuzz, want);
    }
    good.roundTrip();
    good.finish();
    peer.close();
    harness.checkHealthy(mark);
  }

  @Property(tries = 200)
  void sessionsOfOneWorkerThatSupersedeEachOtherAreEachLostOnceAndNeverLiveTogether(
      @ForAll("crowds") List<List<Step>> scripts) throws Exception {
    int mark = harness.events.size();
    GoodSession good = harness.joinGood();
    List<List<Step>> named = new ArrayList<>();
    List<FuzzPeer> peers = new ArrayList<>();
    for (int i = 0; i < scripts.size(); i++) {
      named.add(renameHellos(scripts.get(i), "conn-" + i));
      peers.add(harness.connect());
    }
    // Interleave: step k of every connection before step k+1 of any.
    int longest = named.stream().mapToInt(List::size).max().orElse(0);
    for (int k = 0; k < longest; k++) {
      for (int i = 0; i < named.size(); i++) {
        if (k < named.get(i).size()) {
          peers.get(i).perform(named.get(i).get(k));
        }
      }
    }
    for (FuzzPeer p : peers) {
      assertThat(p.finish(WorkerPortHarness.PATIENCE)).as("server closes after our FIN").isTrue();
    }
    WorkerPortHarness.soon().until(() -> fuzzEvents(mark, good).stream()
        .filter(e -> e.kind() == Kind.JOINED).allMatch(e -> harness.events.lost(e.worker())));
    good.roundTrip();

    for (int i = 0; i < named.size(); i++) {
      String name = "conn-" + i;
      Expected want = ReferenceModel.expect(ReferenceModel.decode(ReferenceModel.wire(named.get(i)),
          WireFuzz.MAX_FRAME_BYTES));
      List<WorkerHandle> handles = fuzzEvents(mark, good).stream().filter(e -> e.kind() == Kind.JOINED)
          .map(Event::worker).filter(h -> h.name().equals(name)).toList();
      assertThat(handles).as("sessions of connection %d", i).hasSizeLessThanOrEqualTo(want.joined() ? 1 : 0);
      for (WorkerHandle h : handles) {
        // Superseded, it may have been cut short: its reports are a prefix of the model's.
        List<Event> es = harness.events.of(h);
        List<AttemptReport> reports = es.stream().filter(e -> e.kind() == Kind.ENDED).map(Event::report).toList();
        assertThat(want.reports()).as("reports of connection %d", i).hasSizeGreaterThanOrEqualTo(reports.size());
        assertThat(want.reports().subList(0, reports.size())).as("reports of connection %d", i).isEqualTo(reports);
        String reason = es.get(es.size() - 1).reason();
        assertThat(reason.equals("superseded by a new session") || want.lostReason().test(reason))
            .as("connection %d lost as '%s', expected '%s' or superseded", i, reason, want.lostDescription())
            .isTrue();
        if (!reason.equals("superseded by a new session")) {
          assertThat(reports).as("reports of connection %d, not superseded", i).isEqualTo(want.reports());
        }
      }
      checkFramesReceived(peers.get(i), want);
    }
    good.finish();
    for (FuzzPeer p : peers) {
      p.close();
    }
    harness.checkHealthy(mark);
  }

  // ---- the shared try ----

  private void playAndCheck(List<Step> script) throws Exception {
    int mark = harness.events.size();
    GoodSession good = harness.joinGood();
    FuzzPeer fuzz = harness.connect();
    for (Step s : script) {
      if (!fuzz.perform(s)) {
        break; // the server has closed: the rest goes nowhere, and the model says it is never read
      }
    }
    assertThat(fuzz.finish(WorkerPortHarness.PATIENCE)).as("the server closes the connection after our FIN")
        .isTrue();
    Expected want = ReferenceModel.expect(ReferenceModel.decode(ReferenceModel.wire(script), WireFuzz.MAX_FRAME_BYTES));
    // Shows in the report how often each ending was reached, so that a generator drifting away from one
    // (say, no session joining any more) is visible.
    Statistics.label("session").collect(want.joined() ? "joined, then " + category(want.lostDescription())
        : "refused before joining");
    Statistics.label("reports per session").collect(Math.min(want.reports().size(), 3));
    if (want.joined()) {
      WorkerPortHarness.soon().until(() -> fuzzEvents(mark, good).stream()
          .anyMatch(e -> e.kind() == Kind.LOST));
    }

    good.roundTrip(); // also gives a stray event from the fuzzed connection time to show up

    List<Event> fuzzed = fuzzEvents(mark, good);
    if (!want.joined()) {
      assertThat(fuzzed).as("events of a session that must never join (%s)", want).isEmpty();
    } else {
      assertThat(fuzzed).as("events of the fuzzed session").isNotEmpty();
      WorkerHandle h = fuzzed.get(0).worker();
      assertThat(fuzzed).as("all events come from one session").allMatch(e -> e.worker() == h);
      assertSessionMatches(h, want);
    }
    checkFramesReceived(fuzz, want);
    good.finish();
    fuzz.close();
    harness.checkHealthy(mark);
  }

  private static String category(String lostDescription) {
    int colon = lostDescription.indexOf(':');
    return colon < 0 ? lostDescription : lostDescription.substring(0, colon);
  }

  /** Events since {@code mark} of every session but the well-behaved ones. */
  private List<Event> fuzzEvents(int mark, GoodSession good) {
    return harness.events.since(mark).stream()
        .filter(e -> e.worker() != good.handle && !e.worker().workerId().startsWith("good-")).toList();
  }

  private void assertSessionMatches(WorkerHandle h, Expected want) {
    List<Event> es = harness.events.of(h);
    assertThat(h.workerId()).isEqualTo(want.workerId());
    assertThat(es.stream().map(Event::kind).toList()).as("event kinds, expected %s", want)
        .startsWith(Kind.JOINED).endsWith(Kind.LOST)
        .containsOnlyOnce(Kind.JOINED, Kind.LOST);
    assertThat(es.stream().filter(e -> e.kind() == Kind.ENDED).map(Event::report).toList())
        .as("reports, in order").isEqualTo(want.reports());
    String reason = es.get(es.size() - 1).reason();
    assertThat(want.lostReason().test(reason)).as("lost as '%s', expected '%s'", reason, want.lostDescription())
        .isTrue();
  }

  /**
   * What the coordinator sends a fuzzed peer: Welcome only first and only if it joined; Goodbye only last;
   * heartbeats (when the session was idle for long) only between the two.
   */
  private static void checkFramesReceived(FuzzPeer peer, Expected want) {
    List<Envelope.BodyCase> all = peer.received();
    int firstHeartbeat = all.indexOf(Envelope.BodyCase.HEARTBEAT);
    if (firstHeartbeat >= 0) {
      assertThat(all.subList(0, firstHeartbeat)).as("frames before the coordinator's first heartbeat")
          .contains(Envelope.BodyCase.WELCOME).doesNotContain(Envelope.BodyCase.GOODBYE);
    }
    List<Envelope.BodyCase> got = all.stream().filter(b -> b != Envelope.BodyCase.HEARTBEAT).toList();
    assertThat(got).as("frames sent to the fuzzed peer").doesNotHaveDuplicates();
    if (!want.joined()) {
      assertThat(got).as("frames sent to a peer that never joins").doesNotContain(Envelope.BodyCase.WELCOME);
    }
    if (got.contains(Envelope.BodyCase.WELCOME)) {
      assertThat(got.get(0)).isEqualTo(Envelope.BodyCase.WELCOME);
    }
    if (got.contains(Envelope.BodyCase.GOODBYE)) {
      assertThat(got.get(got.size() - 1)).isEqualTo(Envelope.BodyCase.GOODBYE);
    }
    assertThat(got).isSubsetOf(Envelope.BodyCase.WELCOME, Envelope.BodyCase.GOODBYE);
  }

  private static List<Step> renameHellos(List<Step> script, String name) {
    return script.stream().map(s -> s instanceof Step.Frame f && f.envelope().hasHello()
        ? new Step.Frame(f.envelope().toBuilder().setHello(f.envelope().getHello().toBuilder().setName(name)).build(),
            f.label() + " named " + name)
        : s).toList();
  }

  // ---- generators ----

  @Provide
  Arbitrary<List<Step>> sessions() {
    return WireFuzz.session(10, 1);
  }

  @Provide
  Arbitrary<List<Step>> garbage() {
    return WireFuzz.session(4, 12);
  }

  @Provide
  Arbitrary<Boolean> joinedOrNot() {
    return Arbitraries.of(true, false);
  }

  @Provide
  Arbitrary<Step> oversized() {
    return WireFuzz.oversizedPrefix();
  }

  @Provide
  Arbitrary<List<List<Step>>> crowds() {
    return WireFuzz.session(4, 1).list().ofMinSize(2).ofMaxSize(3);
  }
}
