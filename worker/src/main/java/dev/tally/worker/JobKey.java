package dev.tally.worker;

/**
 * A job and the lease token it was assigned under: the identity of one attempt at a worker. Two Assigns
 * of the same job under different tokens are different attempts (the older lease was revoked), so
 * everything the worker keeps per attempt (held jobs, outbox entries, slot tasks) is keyed by both.
 *
 * @param jobId the job, as the coordinator's store numbers it (unique within one store only)
 * @param token the lease's fencing token, as the Assign gave it (an unsigned 64-bit value in a long)
 */
public record JobKey(long jobId, long token) {
  @Override
  public String toString() {
    return "job " + jobId + " token " + Long.toUnsignedString(token);
  }
}
