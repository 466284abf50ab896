package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.protocol.ProtocolLimits;
import dev.tally.worker.WorkerSettings;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * The coordinator never sends a worker more than the worker holds: for every slot count a worker may
 * announce and every prefetch a coordinator accepts, the dispatch window fits the worker's queue. A
 * prefetch the coordinator took but the worker refused once turned every case into an error.
 */
class ProtocolLimitsAgreementTest {

  @Property(tries = 500)
  void everyDispatchWindowFitsTheWorkersQueue(
      @ForAll @IntRange(min = 1, max = ProtocolLimits.MAX_WORKER_SLOTS) int slots,
      @ForAll @IntRange(min = 0, max = ProtocolLimits.MAX_PREFETCH) int prefetch) {
    WorkerServer.Settings coordinator = WorkerServer.Settings.builder().prefetch(prefetch).build();
    int held = slots + WorkerSettings.defaultQueueLimit(slots);
    assertThat(coordinator.dispatchWindow(slots)).isLessThanOrEqualTo(held);
  }

  @Test
  void aPrefetchBeyondWhatWorkersHoldIsRefused() {
    assertThatThrownBy(() -> WorkerServer.Settings.builder().prefetch(ProtocolLimits.MAX_PREFETCH + 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("prefetch must be between 0 and 1024");
  }
}
