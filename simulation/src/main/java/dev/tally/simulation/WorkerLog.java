package dev.tally.simulation;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What the simulated workers did, as they saw it, kept apart from the store: which attempts (job, token)
 * each received, which reports it sent, which acks and abandons it got, when it died. The {@link Checker}
 * holds the store to this independent account.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
public final class WorkerLog {
  /** What one entry records. */
  public enum Kind {
    /** The worker received an assignment of the job under the token. */
    ASSIGNED,
    /** The worker sent (or re-sent) an outcome for the job under the token. */
    SENT_OUTCOME,
    /** The worker sent (or re-sent) a retryable failure for the job under the token. */
    SENT_FAILURE,
    /** The worker received an ack for its report; {@code detail} is the status (RECORDED, DUPLICATE, ...). */
    ACKED,
    /** The worker was told to abandon the job under the token and stopped it. */
    ABANDONED,
    /** The worker's process died; everything it held is gone. */
    CRASHED
  }

  /**
   * One thing one worker did or saw.
   *
   * @param atMillis virtual time, ms since the history began
   * @param worker the worker's name (also the lease owner and recording worker in the store)
   * @param kind what happened
   * @param jobId the job, or 0 for {@link Kind#CRASHED}
   * @param token the attempt's fencing token, or 0
   * @param detail the ack status, the verdict or failure kind, "resend", or empty
   */
  public record Entry(long atMillis, String worker, Kind kind, long jobId, long token, String detail) {}

  private final List<Entry> entries = new ArrayList<>();

  void add(long atMillis, String worker, Kind kind, long jobId, long token, String detail) {
    entries.add(new Entry(atMillis, worker, kind, jobId, token, detail));
  }

  /** Every entry, in the order it happened. */
  public List<Entry> entries() {
    return Collections.unmodifiableList(entries);
  }
}
