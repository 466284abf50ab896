package dev.tally.core.store;

/**
 * One ended attempt at a job, from the attempt history.
 *
 * @param jobId the job
 * @param token the attempt's fencing token
 * @param worker the worker that held the lease
 * @param startedAtMillis when the lease was issued, epoch milliseconds
 * @param endedAtMillis when the attempt ended, epoch milliseconds
 * @param ending how it ended: {@code recorded}, or an {@link dev.tally.core.InfraFailure.Kind} in lower case
 * @param detail a sentence about the ending (may be empty)
 * @param timing how long it took: measured on monotonic clocks, unlike the two wall-clock instants
 * @param duplicateResults how many times its result reached the store again after it was recorded
 *     (each suppressed as a duplicate)
 * @param fencedResults how many results of this attempt reached the store after its lease had ended (each
 *     refused by its fencing token)
 */
public record AttemptView(
    long jobId, long token, String worker, long startedAtMillis, long endedAtMillis, String ending, String detail,
    AttemptTiming timing, int duplicateResults, int fencedResults) {
  public AttemptView {
    java.util.Objects.requireNonNull(timing, "timing");
  }

  /** An attempt no late result has reached (yet). */
  public AttemptView(long jobId, long token, String worker, long startedAtMillis, long endedAtMillis, String ending,
      String detail, AttemptTiming timing) {
    this(jobId, token, worker, startedAtMillis, endedAtMillis, ending, detail, timing, 0, 0);
  }

  /** This attempt with one more late result: a duplicate of its recorded one, or one fenced after it ended. */
  public AttemptView withLateResult(boolean duplicate) {
    return new AttemptView(jobId, token, worker, startedAtMillis, endedAtMillis, ending, detail, timing,
        duplicateResults + (duplicate ? 1 : 0), fencedResults + (duplicate ? 0 : 1));
  }
}
