package dev.tally.protocol.mapping;

import com.google.protobuf.ByteString;
import dev.tally.core.Assignment;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.InfraFailure;
import dev.tally.core.JournalEntry;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.schedule.Ack;
import dev.tally.core.schedule.AttemptReport;
import dev.tally.protocol.AckEntry;
import dev.tally.protocol.Assign;
import dev.tally.protocol.JournalAck;
import dev.tally.protocol.JournalledResponse;
import dev.tally.protocol.Result;
import dev.tally.protocol.RunConfig;
import java.nio.charset.StandardCharsets;

/**
 * Conversions between core values ({@code dev.tally.core}) and their protobuf wire forms
 * ({@code dev.tally.protocol}), in one place so that each field's mapping is decided once.
 *
 * <p>Unsigned wire integers ({@code uint64} tokens and durations) travel as the same 64 bits in a Java
 * {@code long}. A wire value the core cannot hold (a duration at or above 2^63 ms, a missing verdict) is
 * refused with an {@link IllegalArgumentException} naming the field: the connection that sent it is
 * closed as malformed.
 *
 * <p>Both ends use this one class: the coordinator to send assignments and acks and to read results, the
 * worker to send results. A mapping decided twice drifts (it did: the worker once sent a {@code
 * WORKER_LOST} as an evaluator crash while the coordinator refused it).
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class WireMapping {
  private WireMapping() {}

  // ---- core -> wire ----

  /**
   * The wire form of a leased attempt: ids, token, attempt number, case id and the case's JSON as UTF-8.
   * The evaluator travels separately, once per run, as a {@link #runConfig RunConfig}.
   */
  public static Assign toWire(Assignment a) {
    Assign.Builder b = Assign.newBuilder()
        .setJobId(a.jobId())
        .setRunId(a.runId())
        .setToken(a.token())
        .setAttempt(a.attempt())
        .setCaseId(a.caseId())
        .setCaseJson(ByteString.copyFrom(a.caseJson(), StandardCharsets.UTF_8));
    a.journal().forEach((digest, response) ->
        b.addJournal(JournalledResponse.newBuilder().setRequestDigest(digest).setResponse(response)));
    return b.build();
  }

  /** A worker's JournalEntry frame body. */
  public static dev.tally.protocol.JournalEntry toWire(JournalEntry e) {
    return dev.tally.protocol.JournalEntry.newBuilder()
        .setJobId(e.jobId())
        .setToken(e.token())
        .setRequestDigest(e.requestDigest())
        .setResponse(e.response())
        .setPromptTokens(e.usage().promptTokens())
        .setCompletionTokens(e.usage().completionTokens())
        .build();
  }

  /** The wire form of one journal entry's settlement. */
  public static JournalAck toWire(dev.tally.core.schedule.JournalAck ack) {
    JournalAck.Status status = switch (ack.status()) {
      case STORED -> JournalAck.Status.STORED;
      case ALREADY_STORED -> JournalAck.Status.ALREADY_STORED;
      case FENCED -> JournalAck.Status.FENCED;
    };
    return JournalAck.newBuilder()
        .setJobId(ack.jobId())
        .setToken(ack.token())
        .setRequestDigest(ack.requestDigest())
        .setStatus(status)
        .build();
  }

  /** The wire form of how run {@code runId} evaluates its cases; the case timeout in whole milliseconds. */
  public static RunConfig runConfig(long runId, EvaluatorSpec spec) {
    return RunConfig.newBuilder()
        .setRunId(runId)
        .setEvaluator(spec.kind())
        .putAllOptions(spec.options())
        .setCaseTimeoutMillis(spec.caseTimeout().toMillis())
        .build();
  }

  /** The wire form of one settled report. */
  public static AckEntry toWire(Ack ack) {
    return AckEntry.newBuilder()
        .setJobId(ack.jobId())
        .setToken(ack.token())
        .setStatus(toWire(ack.status()))
        .build();
  }

  static AckEntry.Status toWire(dev.tally.core.schedule.AckStatus status) {
    return switch (status) {
      case RECORDED -> AckEntry.Status.RECORDED;
      case DUPLICATE -> AckEntry.Status.DUPLICATE;
      case FENCED -> AckEntry.Status.FENCED;
      case RELEASED -> AckEntry.Status.RELEASED;
    };
  }

  /** The wire form of an evaluator's outcome; a null score becomes {@code has_score = false}, other nulls unset fields. */
  public static dev.tally.protocol.Outcome toWire(Outcome o) {
    dev.tally.protocol.Outcome.Builder b = dev.tally.protocol.Outcome.newBuilder()
        .setVerdict(toWire(o.verdict()))
        .setOutputTail(o.outputTail())
        .setDurationMillis(o.durationMillis());
    if (o.score() != null) {
      b.setHasScore(true).setScore(o.score());
    }
    if (o.answer() != null) {
      b.setAnswer(o.answer());
    }
    if (o.fieldsJson() != null) {
      b.setFieldsJson(o.fieldsJson());
    }
    if (o.exitCode() != null) {
      b.setExitCode(o.exitCode());
    }
    return b.setStderrTail(o.stderrTail()).build();
  }

  static dev.tally.protocol.Verdict toWire(Verdict v) {
    return switch (v) {
      case PASS -> dev.tally.protocol.Verdict.PASS;
      case FAIL -> dev.tally.protocol.Verdict.FAIL;
      case ERROR -> dev.tally.protocol.Verdict.ERROR;
    };
  }

  /**
   * A worker's Result frame for a final outcome.
   *
   * @param jobId the job
   * @param token the lease's fencing token, as the Assign gave it
   */
  public static Result result(long jobId, long token, Outcome outcome) {
    return Result.newBuilder().setJobId(jobId).setToken(token).setOutcome(toWire(outcome)).build();
  }

  /**
   * A worker's Result frame for a retryable failure.
   *
   * @param durationMillis how long the attempt ran, ms
   * @throws IllegalArgumentException if the failure's kind is not one a worker reports (see {@link
   *     InfraFailure.Kind#reportedByWorkers()})
   */
  public static Result result(long jobId, long token, InfraFailure failure, long durationMillis) {
    return Result.newBuilder().setJobId(jobId).setToken(token).setFailure(toWire(failure, durationMillis)).build();
  }

  /**
   * The wire form of a worker-side infrastructure failure, with its duration.
   *
   * @throws IllegalArgumentException for a kind the coordinator decides itself ({@code WORKER_LOST},
   *     {@code COORDINATOR_RESTARTED}, {@code LEASE_EXPIRED}; see {@link InfraFailure.Kind#reportedByWorkers()}):
   *     those have no wire form
   */
  public static dev.tally.protocol.InfraFailure toWire(InfraFailure f, long durationMillis) {
    if (!f.kind().reportedByWorkers()) {
      throw new IllegalArgumentException("failure kind " + f.kind() + " is decided by the coordinator and has no wire form");
    }
    dev.tally.protocol.InfraFailure.Kind kind = switch (f.kind()) {
      case TIMEOUT -> dev.tally.protocol.InfraFailure.Kind.TIMEOUT;
      case SIGNALED -> dev.tally.protocol.InfraFailure.Kind.SIGNALED;
      case HANDED_BACK -> dev.tally.protocol.InfraFailure.Kind.HANDED_BACK;
      case RATE_LIMITED -> dev.tally.protocol.InfraFailure.Kind.RATE_LIMITED;
      default -> dev.tally.protocol.InfraFailure.Kind.EVALUATOR_CRASHED;
    };
    return dev.tally.protocol.InfraFailure.newBuilder()
        .setKind(kind)
        .setDetail(f.detail())
        .setRetryAfterMillis(f.retryAfterMillis())
        .setDurationMillis(durationMillis)
        .build();
  }

  // ---- wire -> core ----

  /**
   * A worker's journal entry.
   *
   * @throws IllegalArgumentException if the digest or the response breaks {@link JournalEntry}'s limits, or
   *     a token count {@link dev.tally.core.TokenUsage}'s (unsigned on the wire: past 2^63 reads negative)
   */
  public static JournalEntry toCore(dev.tally.protocol.JournalEntry e) {
    return new JournalEntry(e.getJobId(), e.getToken(), e.getRequestDigest(), e.getResponse(),
        new dev.tally.core.TokenUsage(e.getPromptTokens(), e.getCompletionTokens()));
  }

  /**
   * A journal entry's settlement, as the worker reads it: an unset or unknown status (from a newer
   * coordinator) reads as {@code FENCED}, the one that stores nothing the worker relies on.
   */
  public static JournalEntry.Status toCore(JournalAck.Status status) {
    return switch (status) {
      case STORED -> JournalEntry.Status.STORED;
      case ALREADY_STORED -> JournalEntry.Status.ALREADY_STORED;
      case FENCED, STATUS_UNSPECIFIED, UNRECOGNIZED -> JournalEntry.Status.FENCED;
    };
  }

  /** The responses an Assign carries, by request digest, in order. */
  public static java.util.Map<String, String> journal(Assign a) {
    if (a.getJournalCount() == 0) {
      return java.util.Map.of();
    }
    java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
    for (JournalledResponse r : a.getJournalList()) {
      out.putIfAbsent(r.getRequestDigest(), r.getResponse());
    }
    return out;
  }

  /**
   * How a worker says an attempt ended, with its queue and run times.
   *
   * @throws IllegalArgumentException if the Result sets neither outcome nor failure, or its outcome cannot
   *     be read (see {@link #toCore(dev.tally.protocol.Outcome)})
   */
  public static AttemptReport toReport(Result r) {
    long queuedMillis = duration(r.getQueuedMillis());
    return switch (r.getEndingCase()) {
      case OUTCOME -> AttemptReport.of(r.getJobId(), r.getToken(), toCore(r.getOutcome()))
          .withTiming(queuedMillis, duration(r.getOutcome().getDurationMillis()));
      case FAILURE -> AttemptReport.failed(r.getJobId(), r.getToken(), toCore(r.getFailure()))
          .withTiming(queuedMillis, duration(r.getFailure().getDurationMillis()));
      case ENDING_NOT_SET -> throw new IllegalArgumentException(
          "Result for job " + r.getJobId() + " (token " + Long.toUnsignedString(r.getToken())
              + ") has neither outcome nor failure");
    };
  }

  /**
   * An evaluator's outcome; {@code has_score = false} becomes a null score.
   *
   * @throws IllegalArgumentException if the verdict is unset or unknown to this version (an outcome is
   *     final, so the coordinator refuses to guess one), the score is NaN or infinite, the fields are not
   *     the text of a JSON object, or the duration is at or above 2^63 ms
   */
  public static Outcome toCore(dev.tally.protocol.Outcome o) {
    Verdict verdict = switch (o.getVerdict()) {
      case PASS -> Verdict.PASS;
      case FAIL -> Verdict.FAIL;
      case ERROR -> Verdict.ERROR;
      case VERDICT_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException(
          "outcome verdict must be PASS, FAIL or ERROR, got " + o.getVerdictValue());
    };
    return new Outcome(verdict, o.getHasScore() ? o.getScore() : null, o.getOutputTail(),
        duration(o.getDurationMillis()), o.hasAnswer() ? o.getAnswer() : null,
        o.hasFieldsJson() ? o.getFieldsJson() : null, o.hasExitCode() ? o.getExitCode() : null, o.getStderrTail());
  }

  /**
   * A worker-side infrastructure failure. An unset or unknown kind (from a newer worker) is read as
   * {@code EVALUATOR_CRASHED} with the raw kind number in the detail: either way the attempt failed
   * retryably, which is all the scheduler needs to know. The wire's {@code duration_millis} is dropped:
   * the core {@link InfraFailure} has no field for it.
   */
  public static InfraFailure toCore(dev.tally.protocol.InfraFailure f) {
    return switch (f.getKind()) {
      case TIMEOUT -> new InfraFailure(InfraFailure.Kind.TIMEOUT, f.getDetail());
      case SIGNALED -> new InfraFailure(InfraFailure.Kind.SIGNALED, f.getDetail());
      case EVALUATOR_CRASHED -> new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, f.getDetail());
      case HANDED_BACK -> new InfraFailure(InfraFailure.Kind.HANDED_BACK, f.getDetail());
      case RATE_LIMITED -> {
        long wait = f.getRetryAfterMillis();
        if (wait < 0 || wait > InfraFailure.MAX_RETRY_AFTER_MILLIS) {
          throw new IllegalArgumentException("retry_after_millis " + Long.toUnsignedString(wait)
              + " is beyond its limit of " + InfraFailure.MAX_RETRY_AFTER_MILLIS + " ms (a day)");
        }
        yield new InfraFailure(InfraFailure.Kind.RATE_LIMITED, f.getDetail(), wait);
      }
      case KIND_UNSPECIFIED, UNRECOGNIZED -> new InfraFailure(
          InfraFailure.Kind.EVALUATOR_CRASHED, "unknown failure kind " + f.getKindValue() + ": " + f.getDetail());
    };
  }

  private static long duration(long durationMillis) {
    if (durationMillis < 0) {
      throw new IllegalArgumentException(
          "duration_millis " + Long.toUnsignedString(durationMillis) + " is beyond 2^63-1 ms");
    }
    return durationMillis;
  }
}
