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
 */
public record AttemptView(
    long jobId, long token, String worker, long startedAtMillis, long endedAtMillis, String ending, String detail,
    AttemptTiming timing) {
  public AttemptView {
    java.util.Objects.requireNonNull(timing, "timing");
  }
}
