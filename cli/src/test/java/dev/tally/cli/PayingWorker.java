package dev.tally.cli;

import dev.tally.core.Verdict;
import dev.tally.worker.WorkerSession;
import dev.tally.worker.WorkerSettings;
import dev.tally.worker.eval.EvalContext;
import dev.tally.worker.eval.Evaluation;
import dev.tally.worker.eval.Evaluator;
import dev.tally.worker.eval.EvaluatorFactory;
import dev.tally.worker.eval.ResponseJournal;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;

/**
 * A real worker process (the product's {@link WorkerSession}) whose {@code sleep} evaluator is replaced by
 * {@link PayingEvaluator}: a stand-in for a paid model call, for the response journal's process tests. Test
 * code only: the product has no such evaluator.
 *
 * <p>Arguments: {@code HOST PORT NAME SLOTS BILLING_FILE}.
 */
public final class PayingWorker {
  private PayingWorker() {}

  public static void main(String[] args) throws Exception {
    Path billing = Path.of(args[4]);
    WorkerSettings settings = WorkerSettings.builder(args[0], Integer.parseInt(args[1]))
        .name(args[2])
        .slots(Integer.parseInt(args[3]))
        .evaluatorFactory((kind, options) -> kind.equals("sleep") ? new PayingEvaluator(billing, args[2])
            : EvaluatorFactory.create(kind, options))
        .build();
    WorkerSession session = new WorkerSession(settings);
    session.start();
    session.awaitTermination();
  }

  /**
   * Per case: the request is the case's id; if the journal has its response, it is used and nothing is
   * paid; else the call is "paid" (a line {@code CASE ATTEMPT WORKER} appended to the billing file, then
   * {@code callMillis} of waiting for the response), its response journalled, and then {@code
   * scoreMillis} pass "scoring" it: the window in which a kill finds the response journalled but the case
   * not yet reported. The outcome's output says which ({@code paid} or {@code journalled}).
   */
  static final class PayingEvaluator implements Evaluator {
    static final long CALL_MILLIS = 150;
    static final long SCORE_MILLIS = 600;
    private final Path billing;
    private final String worker;

    PayingEvaluator(Path billing, String worker) {
      this.billing = billing;
      this.worker = worker;
    }

    @Override
    public Evaluation evaluate(EvalContext ctx) {
      String digest = digest(ctx.caseId());
      try {
        Optional<String> journalled = ctx.journal().find(digest);
        String how;
        if (journalled.isPresent()) {
          how = "journalled";
        } else {
          Files.writeString(billing, ctx.caseId() + " " + ctx.attempt().attempt() + " " + worker + "\n",
              StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.SYNC);
          if (ctx.awaitCancellation(Duration.ofMillis(CALL_MILLIS))) {
            return Evaluation.failed(dev.tally.core.InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled", ctx.elapsedMillis());
          }
          ctx.journal().record(digest, "{\"answer\":\"" + ctx.caseId() + "\"}", dev.tally.core.TokenUsage.NONE);
          how = "paid";
        }
        if (ctx.awaitCancellation(Duration.ofMillis(SCORE_MILLIS))) {
          return Evaluation.failed(dev.tally.core.InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled", ctx.elapsedMillis());
        }
        return Evaluation.finished(Verdict.PASS, null, how, ctx.elapsedMillis());
      } catch (ResponseJournal.JournalException e) {
        return Evaluation.failed(dev.tally.core.InfraFailure.Kind.EVALUATOR_CRASHED, e.getMessage(), ctx.elapsedMillis());
      } catch (IOException e) {
        return Evaluation.error("cannot write the billing file: " + e, ctx.elapsedMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Evaluation.failed(dev.tally.core.InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted", ctx.elapsedMillis());
      }
    }

    static String digest(String request) {
      try {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(request.getBytes(StandardCharsets.UTF_8)));
      } catch (NoSuchAlgorithmException e) {
        throw new AssertionError(e);
      }
    }
  }
}
