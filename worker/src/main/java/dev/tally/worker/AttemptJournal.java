package dev.tally.worker;

import dev.tally.core.JournalEntry;
import dev.tally.core.cases.CaseLines;
import dev.tally.worker.eval.EvalContext;
import dev.tally.worker.eval.ResponseJournal;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The {@link ResponseJournal} of one attempt on a worker: {@link #find} answers from what the attempt's
 * Assign carried (the responses earlier attempts of the case journalled) and what this attempt journalled
 * itself; {@link #record} hands a {@link JournalEntry} to the worker's session ({@link Sink}) and waits,
 * on the attempt's slot thread, for the coordinator's answer, which comes only after its store committed.
 *
 * <p>The wait ends early, with a {@link JournalException}, when the attempt is cancelled (an Abandon, the
 * worker stopping), when the coordinator refuses the entry (the lease is not current: fenced like a
 * result), when the session ends, or when the attempt's time budget is spent: in each case the caller ends
 * the attempt as a retryable failure, and the next attempt may pay for that one request again. A response
 * over {@link JournalEntry#MAX_RESPONSE_BYTES} is refused before anything is sent.
 *
 * <p>Thread-safety: {@link #find} and {@link #record} may be called from any thread; the sink completes the
 * answer from the session's thread.
 */
final class AttemptJournal implements ResponseJournal {

  /**
   * Where an attempt's entries go: the session that sends them to the coordinator. It completes {@code
   * answer} with the coordinator's verdict, or exceptionally (with why) if the entry cannot be answered
   * (the attempt is no longer held, the session ended). Must not block.
   */
  interface Sink {
    void journal(JournalEntry entry, CompletableFuture<JournalEntry.Status> answer);
  }

  private final AssignedJob job;
  private final EvalContext context;
  private final Sink sink;
  /** What this attempt journalled (stored or already stored), for a repeated {@link #find}. */
  private final Map<String, String> recorded = new ConcurrentHashMap<>();

  AttemptJournal(AssignedJob job, EvalContext context, Sink sink) {
    this.job = Objects.requireNonNull(job, "job");
    this.context = Objects.requireNonNull(context, "context");
    this.sink = Objects.requireNonNull(sink, "sink");
  }

  @Override
  public java.util.Optional<String> find(String requestDigest) {
    String mine = recorded.get(requestDigest);
    return java.util.Optional.ofNullable(mine != null ? mine : job.journalled().get(requestDigest));
  }

  @Override
  public void record(String requestDigest, String response, dev.tally.core.TokenUsage usage)
      throws InterruptedException, JournalException {
    String problem = JournalEntry.problem(Objects.requireNonNull(requestDigest, "requestDigest"),
        Objects.requireNonNull(response, "response"));
    if (problem != null) {
      throw new JournalException("case " + CaseLines.quotedId(job.caseId()) + ": cannot journal the response: " + problem);
    }
    JournalEntry entry = new JournalEntry(job.key().jobId(), job.key().token(), requestDigest, response,
        Objects.requireNonNull(usage, "usage"));
    CompletableFuture<JournalEntry.Status> answer = new CompletableFuture<>();
    Runnable unregister = context.onCancel(() -> answer.completeExceptionally(
        new IllegalStateException("the attempt was cancelled: " + context.cancelReason())));
    try {
      sink.journal(entry, answer);
      long leftMillis = context.timeout().toMillis() - context.elapsedMillis();
      JournalEntry.Status status = answer.get(Math.max(1, leftMillis), TimeUnit.MILLISECONDS);
      if (status == JournalEntry.Status.FENCED) {
        throw new JournalException("case " + CaseLines.quotedId(job.caseId()) + ": the coordinator refused the journal entry: the lease "
            + job.key() + " is no longer current");
      }
      recorded.put(requestDigest, response);
    } catch (ExecutionException e) {
      throw new JournalException("case " + CaseLines.quotedId(job.caseId()) + ": the response was not journalled: "
          + e.getCause().getMessage());
    } catch (TimeoutException e) {
      throw new JournalException("case " + CaseLines.quotedId(job.caseId()) + ": the coordinator did not confirm the journal entry within"
          + " the case's timeout of " + context.timeout().toMillis() + " ms");
    } finally {
      unregister.run();
    }
  }
}
