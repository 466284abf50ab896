package dev.tally.core.schedule;

import dev.tally.core.JournalEntry;
import java.util.Objects;

/**
 * The settlement of one journal entry, sent to the worker that journalled it once the store committed (or
 * refused) it: its attempt waits for this before it goes on.
 *
 * @param jobId the job
 * @param token the token the worker journalled under
 * @param requestDigest the entry's request digest
 * @param status what the store made of it
 */
public record JournalAck(long jobId, long token, String requestDigest, JournalEntry.Status status) {
  /** @throws NullPointerException if the digest or the status is null */
  public JournalAck {
    Objects.requireNonNull(requestDigest, "requestDigest");
    Objects.requireNonNull(status, "status");
  }
}
