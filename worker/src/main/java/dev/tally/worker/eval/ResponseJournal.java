package dev.tally.worker.eval;

import dev.tally.core.TokenUsage;
import java.util.Optional;

/**
 * The responses of a case's paid calls (a model's completion), kept by the coordinator in its store, so
 * that a case whose attempt is redelivered, resumed, retried or rescored never pays for a response that
 * already reached Tally. An evaluator asks before each call ({@link #find}) and journals each response as
 * soon as it has it, before it scores or reports anything ({@link #record}).
 *
 * <p>Keys: a response belongs to its run and case (an epoch is a case of its own) and to the digest of the
 * request that produced it ({@code requestDigest}: SHA-256 of the request's canonical form, the secret
 * credential left out), so a changed prompt, model or setting is a new request and is paid for.
 *
 * <p>Thread-safety: implementations are called from the attempt's slot thread and must be thread-safe
 * against the session's own threads.
 */
public interface ResponseJournal {

  /** A journal that keeps nothing: every request is new (tools and tests; an evaluator outside a run). */
  ResponseJournal NONE = new ResponseJournal() {
    @Override
    public Optional<String> find(String requestDigest) {
      return Optional.empty();
    }

    @Override
    public void record(String requestDigest, String response, TokenUsage usage) {
      // nothing is kept
    }
  };

  /**
   * The response journalled for this case under this request digest by any earlier attempt, if any.
   *
   * @param requestDigest the request's digest (lower-case hex)
   */
  Optional<String> find(String requestDigest);

  /**
   * Journals a response and returns once the coordinator has stored it, so that from then on no attempt of
   * this case pays for this request again.
   *
   * @param requestDigest the request's digest (lower-case hex)
   * @param response the response body as received (bounded by the evaluator)
   * @param usage the tokens the response reports it used ({@link TokenUsage#NONE} if none): the run's spend
   * @throws InterruptedException if the attempt's thread is interrupted while waiting for the store
   * @throws JournalException if the response cannot be journalled (the attempt was cancelled, its lease
   *     was lost, the connection closed): the attempt must end as a retryable failure, and its retry may pay
   *     once more
   */
  void record(String requestDigest, String response, TokenUsage usage) throws InterruptedException, JournalException;

  /** A response could not be journalled; see {@link #record}. */
  final class JournalException extends Exception {
    public JournalException(String message) {
      super(message);
    }
  }
}
