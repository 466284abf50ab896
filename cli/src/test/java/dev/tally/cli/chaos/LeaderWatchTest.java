package dev.tally.cli.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.lead.LeaderEpoch;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The leadership checks of {@code tally chaos --coordinators N} are not vacuous: a takeover is put down to
 * the fault that awaited it and timed from it, and a deposed epoch that writes again, a skipped epoch and a
 * fault with no takeover are each caught.
 */
class LeaderWatchTest {
  private static final String A = "workers=127.0.0.1:1001 api=http://127.0.0.1:2001";
  private static final String B = "workers=127.0.0.1:1002 api=http://127.0.0.1:2002";

  private static LeaderEpoch epoch(long epoch, String address, long beganAtMillis, long writes) {
    return new LeaderEpoch(epoch, "holder-" + epoch, address, beganAtMillis, writes);
  }

  @Test
  void aTakeoverAfterAFaultIsPutDownToItAndTimedFromIt() {
    LeaderWatch watch = new LeaderWatch();
    assertThat(watch.look(List.of(epoch(1, A, 1_000, 5)))).isEmpty();
    assertThat(watch.leaderWorkerAddress()).isEqualTo("127.0.0.1:1001");
    watch.faultDone("leader kill -9", 10_000);
    assertThat(watch.awaitingTakeover()).isTrue();
    List<LeaderWatch.Takeover> found = watch.look(List.of(epoch(1, A, 1_000, 40), epoch(2, B, 12_750, 0)));

    assertThat(found).containsExactly(new LeaderWatch.Takeover(2, B, "leader kill -9", A, 2_750));
    assertThat(watch.awaitingTakeover()).isFalse();
    assertThat(watch.leaderWorkerAddress()).isEqualTo("127.0.0.1:1002");
    List<LeaderEpoch> end = List.of(epoch(1, A, 1_000, 40), epoch(2, B, 12_750, 90));
    watch.look(end);
    assertThat(watch.violations(end)).isEmpty();
    assertThat(watch.deposedEpochs()).isEqualTo(1);
  }

  @Test
  void aTakeoverNoFaultAwaitedIsUnprompted() {
    LeaderWatch watch = new LeaderWatch();
    watch.look(List.of(epoch(1, A, 1_000, 5)));
    List<LeaderWatch.Takeover> found = watch.look(List.of(epoch(1, A, 1_000, 5), epoch(2, B, 9_000, 0)));
    assertThat(found).singleElement().satisfies(t -> {
      assertThat(t.prompted()).isFalse();
      assertThat(t.tookMillis()).isEqualTo(-1);
    });
  }

  @Test
  void aDeposedEpochThatWritesAgainIsAViolation() {
    LeaderWatch watch = new LeaderWatch();
    watch.look(List.of(epoch(1, A, 1_000, 5)));
    watch.faultDone("leader SIGSTOP/SIGCONT", 2_000);
    watch.look(List.of(epoch(1, A, 1_000, 7), epoch(2, B, 4_000, 0)));
    List<LeaderEpoch> end = List.of(epoch(1, A, 1_000, 8), epoch(2, B, 4_000, 30));
    assertThat(watch.violations(end)).singleElement().asString()
        .contains("epoch 1", "committed 1 write transactions after it was deposed (7 when deposed, 8 now)");
  }

  @Test
  void aSkippedEpochAndAFaultWithNoTakeoverAreViolations() {
    LeaderWatch watch = new LeaderWatch();
    watch.look(List.of(epoch(1, A, 1_000, 5)));
    watch.faultDone("leader kill -9", 2_000);
    assertThatThrownBy(() -> watch.faultDone("leader kill -9", 2_100)).isInstanceOf(IllegalStateException.class);
    List<LeaderEpoch> end = List.of(epoch(1, A, 1_000, 5));
    assertThat(watch.violations(end)).singleElement().asString().contains("no coordinator took over from epoch 1 after its leader kill -9");
    assertThat(watch.violations(List.of(epoch(1, A, 1_000, 5), epoch(3, B, 5_000, 1))))
        .anyMatch(v -> v.contains("jump from 1 to 3"))
        .anyMatch(v -> v.contains("grew by 2 from 1, but 0 takeovers were seen"));
  }
}
