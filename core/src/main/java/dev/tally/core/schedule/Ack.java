package dev.tally.core.schedule;

import java.util.Objects;

/**
 * The settlement of one reported attempt, sent to its worker so it can drop the result from its outbox.
 *
 * @param jobId the job
 * @param token the token the worker reported
 * @param status what the store made of it
 */
public record Ack(long jobId, long token, AckStatus status) {
  public Ack {
    Objects.requireNonNull(status, "status");
  }
}
