package dev.tally.core.schedule;

/** What the coordinator tells a worker about one of its reported attempts, after the store committed. */
public enum AckStatus {
  /** The outcome is the job's result. */
  RECORDED,
  /** The job already held this result; nothing changed. */
  DUPLICATE,
  /** The worker's lease is not current: the result was discarded and the job must be abandoned. */
  FENCED,
  /** The retryable failure was taken; the job goes to another worker. */
  RELEASED
}
