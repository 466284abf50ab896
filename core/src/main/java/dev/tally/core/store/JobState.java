package dev.tally.core.store;

/** Where a job is in its life. {@code DONE}, {@code FAILED} and {@code CANCELLED} are terminal. */
public enum JobState {
  /** Waiting for a lease (possibly not before a backoff time). */
  PENDING,
  /** Held by one worker under a fencing token. */
  LEASED,
  /** Its outcome is recorded. */
  DONE,
  /** It ran out of attempts; its attempt history says why. */
  FAILED,
  /** Its run was cancelled before the job ended: never leased or recorded again (a late result is fenced). */
  CANCELLED;

  /** Whether the job has ended. */
  public boolean terminal() {
    return this == DONE || this == FAILED || this == CANCELLED;
  }
}
