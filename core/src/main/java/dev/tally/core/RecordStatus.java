package dev.tally.core;

/**
 * What {@link dev.tally.core.store.Store#apply} made of one reported outcome. A race lost is a value,
 * not an exception.
 *
 * <p>The fencing rule, in order: a token that is not the job's current lease (the job was released,
 * re-leased or ended since) is {@link #FENCED}; a job already done under this very token is
 * {@link #DUPLICATE}; otherwise the outcome is {@link #RECORDED} and the run's counters advance once.
 */
public enum RecordStatus {
  /** The outcome became the job's result; the run's counters advanced. */
  RECORDED,
  /** The job already holds this holder's result (a resend); nothing changed. */
  DUPLICATE,
  /** The writer does not hold the job's current lease; nothing changed and it must abandon the job. */
  FENCED
}
