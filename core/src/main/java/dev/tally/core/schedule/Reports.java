package dev.tally.core.schedule;

import dev.tally.core.schedule.Step.PendingRecord;
import dev.tally.core.schedule.Step.PendingRelease;
import dev.tally.core.store.StoreBatch.RecordRequest;
import dev.tally.core.store.StoreBatch.ReleaseRequest;
import dev.tally.core.store.StoreBatchResult;
import java.util.ArrayList;
import java.util.List;

/**
 * The duty that turns what workers report (and what the scheduler ends on their behalf) into records and
 * releases, and acknowledges each to its sender only after the commit (I5: an ack means durable). A
 * report whose commit failed stays queued for the next step: one neither recorded nor acked would sit in
 * the worker's outbox until it reconnects.
 */
final class Reports implements Duty {
  private final List<PendingRecord> records = new ArrayList<>();
  private final List<PendingRelease> releases = new ArrayList<>();

  /** A record to commit; {@code latencyNanos} from the lease to the report, or -1 if the lease is not ours. */
  void record(RecordRequest request, WorkerHandle sender, long latencyNanos) {
    records.add(new PendingRecord(request, sender, latencyNanos));
  }

  /** A release to commit; {@code sender} is told how it went, unless null (the session is gone). */
  void release(ReleaseRequest request, WorkerHandle sender) {
    releases.add(new PendingRelease(request, sender));
  }

  @Override
  public void plan(Step step) {
    records.forEach(step::record);
    releases.forEach(step::release);
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {
    records.clear();
    releases.clear();
    step.acks(result).forEach(WorkerHandle::acknowledge);
  }
}
