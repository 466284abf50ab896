package dev.tally.worker;

import dev.tally.worker.eval.CaseAttempt;
import java.util.Objects;

/**
 * One assignment the worker accepted, as the session core hands it to a {@link CaseRunner}: which
 * attempt, which case, how to evaluate it, and when the Assign arrived. Immutable; the runner keeps
 * whatever mutable state running it needs.
 *
 * <p>(The protocol has a {@code dev.tally.protocol.HeldJob} too: that is the wire form of "a job I still
 * hold" in a Hello, a job id and token only.)
 *
 * @param key the attempt
 * @param attempt which attempt it is (run, job, case, attempt number, token, idempotency key), for the
 *     evaluator to hand on
 * @param caseJson the case's whole JSON object
 * @param setup the run's evaluator and case timeout; always {@linkplain RunSetup#usable() usable}
 * @param assignedNanos the worker's monotonic clock when the Assign arrived, for the Result's
 *     {@code queued_millis} (time spent waiting for a slot)
 * @param journalled the responses earlier attempts of the case journalled, by request digest (the Assign's
 *     {@code journal}); usually empty
 */
public record AssignedJob(JobKey key, CaseAttempt attempt, String caseJson, RunSetup setup, long assignedNanos,
    java.util.Map<String, String> journalled) {
  /**
   * @throws NullPointerException if an object component is null
   * @throws IllegalArgumentException if the setup is not usable (such an Assign is refused, never run)
   */
  public AssignedJob {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(attempt, "attempt");
    Objects.requireNonNull(caseJson, "caseJson");
    Objects.requireNonNull(setup, "setup");
    journalled = java.util.Map.copyOf(journalled);
    if (!setup.usable()) {
      throw new IllegalArgumentException("run " + attempt.runId() + " cannot be evaluated here: " + setup.problem());
    }
  }

  /** A job of a case with nothing journalled. */
  public AssignedJob(JobKey key, CaseAttempt attempt, String caseJson, RunSetup setup, long assignedNanos) {
    this(key, attempt, caseJson, setup, assignedNanos, java.util.Map.of());
  }

  /** The case's run. */
  public long runId() {
    return attempt.runId();
  }

  /** The case's {@code id} from the dataset. */
  public String caseId() {
    return attempt.caseId();
  }
}
