package dev.tally.core.store;

/** Where a job is in its life. {@code DONE} and {@code FAILED} are terminal. */
public enum JobState {
  /** Waiting for a lease (possibly not before a backoff time). */
  PENDING,
  /** Held by one worker under a fencing token. */
  LEASED,
  /** Its outcome is recorded. */
  DONE,
  /** It ran out of attempts; its attempt history says why. */
  FAILED;

  /** Whether the job has ended. */
  public boolean terminal() {
    return this == DONE || this == FAILED;
  }
}
