package dev.tally.core.store;

/**
 * What {@link Store#retryErrors} did.
 *
 * @param status whether the run's errors were put back in its queue, or why not
 * @param recordedErrors cases recorded with verdict {@code error} that are to run again
 * @param outOfAttempts cases that had run out of attempts (or were poison) that are to run again
 */
public record RetryResult(Status status, long recordedErrors, long outOfAttempts) {

  /** Why a retry did or did not happen. */
  public enum Status {
    /** The run is running again, with its errored cases pending under fresh attempts. */
    RETRIED,
    /** The run ended without an errored case: nothing changed. */
    NOTHING_TO_RETRY,
    /** The run has not ended: its errors may still be retried by its own attempts. Nothing changed. */
    NOT_ENDED,
    /** The run was cancelled: it is not reopened. Nothing changed. */
    CANCELLED,
    /** There is no such run. */
    UNKNOWN_RUN
  }

  /** Cases to run again. */
  public long retried() {
    return recordedErrors + outOfAttempts;
  }
}
