package dev.tally.worker;

import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.protocol.Result;
import dev.tally.worker.eval.Evaluation;

/** Conversions from the worker's values to wire messages. Stateless. */
final class Wire {
  private Wire() {}

  static Result result(HeldJob.Key key, Evaluation evaluation) {
    Result.Builder b = Result.newBuilder().setJobId(key.jobId()).setToken(key.token());
    if (evaluation instanceof Evaluation.Finished finished) {
      b.setOutcome(outcome(finished.outcome()));
    } else {
      Evaluation.Failed failed = (Evaluation.Failed) evaluation;
      b.setFailure(failure(failed.failure(), failed.durationMillis()));
    }
    return b.build();
  }

  static dev.tally.protocol.Outcome outcome(Outcome o) {
    dev.tally.protocol.Outcome.Builder b =
        dev.tally.protocol.Outcome.newBuilder()
            .setVerdict(
                switch (o.verdict()) {
                  case PASS -> dev.tally.protocol.Verdict.PASS;
                  case FAIL -> dev.tally.protocol.Verdict.FAIL;
                  case ERROR -> dev.tally.protocol.Verdict.ERROR;
                })
            .setOutputTail(o.outputTail())
            .setDurationMillis(o.durationMillis());
    if (o.score() != null) {
      b.setHasScore(true).setScore(o.score());
    }
    return b.build();
  }

  static dev.tally.protocol.InfraFailure failure(InfraFailure f, long durationMillis) {
    dev.tally.protocol.InfraFailure.Kind kind;
    String detail = f.detail();
    switch (f.kind()) {
      case TIMEOUT -> kind = dev.tally.protocol.InfraFailure.Kind.TIMEOUT;
      case SIGNALED -> kind = dev.tally.protocol.InfraFailure.Kind.SIGNALED;
      case EVALUATOR_CRASHED -> kind = dev.tally.protocol.InfraFailure.Kind.EVALUATOR_CRASHED;
      default -> {
        // WORKER_LOST and COORDINATOR_RESTARTED are the coordinator's words; no evaluator says them.
        kind = dev.tally.protocol.InfraFailure.Kind.EVALUATOR_CRASHED;
        detail = f.kind() + ": " + detail;
      }
    }
    return dev.tally.protocol.InfraFailure.newBuilder()
        .setKind(kind)
        .setDetail(detail)
        .setDurationMillis(durationMillis)
        .build();
  }
}
