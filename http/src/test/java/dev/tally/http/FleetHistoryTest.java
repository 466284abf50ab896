package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.store.WorkerStatus;
import dev.tally.core.store.memory.InMemoryStore;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the fleet history makes of successive worker reports: the suspicion charts and the changes. */
class FleetHistoryTest {
  static final long T0 = 1_700_000_000_000L;

  static WorkerStatus live(String id, double level, boolean accepting, int ejections, String ejectionReason, long at) {
    return new WorkerStatus(id, "name-" + id, level + " of 8.00", accepting, 0, ejectionReason, ejections, 1, at, null, level);
  }

  @Test
  void chartsEachLiveWorkersSuspicionAndSeesItsChangesAsTheyCome() {
    FleetHistory h = new FleetHistory(InMemoryStore.create(java.time.Clock.systemUTC()), () -> T0);
    h.sample(List.of(live("a", 0.1, true, 0, null, T0)), T0);
    assertThat(h.events(0)).as("workers there at the start are not news").isEmpty();

    h.sample(List.of(live("a", 3.5, false, 0, null, T0 + 2_000), live("b", 0.0, true, 0, null, T0 + 2_000)), T0 + 2_000);
    h.sample(List.of(live("a", 0.2, true, 1, "3 consecutive infrastructure failures", T0 + 4_000),
        live("b", 0.0, true, 0, null, T0 + 4_000)), T0 + 4_000);
    h.sample(List.of(live("a", 0.2, true, 1, "3 consecutive infrastructure failures", T0 + 4_000),
        live("b", 9.0, false, 0, null, T0 + 6_000).left(T0 + 6_000, "reaped after 5.1s of silence")), T0 + 6_000);

    assertThat(h.events(0)).extracting(FleetHistory.Change::kind, FleetHistory.Change::workerId).containsExactly(
        org.assertj.core.groups.Tuple.tuple("draining", "a"), org.assertj.core.groups.Tuple.tuple("joined", "b"),
        org.assertj.core.groups.Tuple.tuple("accepting", "a"), org.assertj.core.groups.Tuple.tuple("ejected", "a"),
        org.assertj.core.groups.Tuple.tuple("left", "b"));
    assertThat(h.events(0).get(3).detail()).isEqualTo("3 consecutive infrastructure failures");
    assertThat(h.events(0).get(4).detail()).isEqualTo("reaped after 5.1s of silence");
    assertThat(h.events(h.events(0).get(2).seq())).hasSize(2);

    assertThat(h.suspicion(T0)).containsOnlyKeys("a", "b");
    assertThat(h.suspicion(T0).get("a")).extracting(FleetHistory.Sample::level).containsExactly(0.1, 3.5, 0.2);
    assertThat(h.suspicion(T0 + 3_000).get("a")).extracting(FleetHistory.Sample::level).containsExactly(0.2);
    assertThat(h.name("b")).isEqualTo("name-b");
  }

  @Test
  void aWorkerThatJoinedAndLeftBetweenTwoReadsIsSeenLeaving() {
    FleetHistory h = new FleetHistory(InMemoryStore.create(java.time.Clock.systemUTC()), () -> T0);
    h.sample(List.of(), T0);
    h.sample(List.of(live("c", 0.0, true, 0, null, T0 + 500).left(T0 + 900, "reaped after 1.0s of silence")), T0 + 1_000);
    assertThat(h.events(0)).extracting(FleetHistory.Change::kind, FleetHistory.Change::detail)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("left", "reaped after 1.0s of silence"));
  }

  @Test
  void forgetsSamplesOlderThanItKeeps() {
    FleetHistory h = new FleetHistory(InMemoryStore.create(java.time.Clock.systemUTC()), () -> T0);
    h.sample(List.of(live("a", 0.1, true, 0, null, T0)), T0);
    long later = T0 + FleetHistory.KEEP_MILLIS + 1_000;
    h.sample(List.of(live("a", 0.3, true, 0, null, later)), later);
    assertThat(h.suspicion(0).get("a")).extracting(FleetHistory.Sample::level).containsExactly(0.3);
  }
}
