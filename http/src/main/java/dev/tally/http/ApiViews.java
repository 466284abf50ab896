package dev.tally.http;

import dev.tally.core.stats.EstimateText;
import dev.tally.coordinator.report.RunReport;
import dev.tally.core.DurationText;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.Outcome;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.WorkerStatus;
import dev.tally.http.dto.AttemptObject;
import dev.tally.http.dto.CaseObject;
import dev.tally.http.dto.CountersObject;
import dev.tally.http.dto.EvaluatorObject;
import dev.tally.http.dto.UsageObject;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.worker.eval.ModelSettings;
import dev.tally.worker.eval.ServeEvaluator;
import dev.tally.http.dto.RunObject;
import dev.tally.http.dto.SettingsObject;
import dev.tally.http.dto.WorkerObject;
import java.time.Instant;
import java.util.Locale;

/**
 * The one mapping from the store's views to the API's JSON shapes ({@link dev.tally.http.dto}): states and
 * verdicts in lower case, times as ISO-8601 UTC, durations in Tally's duration text, {@code errored} as
 * the summary counts it ({@link RunReport#errored}).
 *
 * <p>Thread-safety: stateless.
 */
public final class ApiViews {
  private ApiViews() {}

  /** A run object. */
  public static RunObject run(RunView run) {
    RunCounters c = run.counters();
    String paused = run.paused().orElse(null);
    UsageObject usage = run.usage().map(u -> new UsageObject(u.promptTokens(), u.completionTokens(), u.costUsd()))
        .orElse(null);
    return new RunObject(run.runId(), run.name(), run.shownState(), time(run.createdAtMillis()),
        run.ended() ? time(run.finishedAtMillis()) : null, run.spec().dataset(), evaluator(run.spec().evaluator()),
        dev.tally.core.score.Scorers.specsOf(run.spec().evaluator().options()),
        new SettingsObject(run.spec().limits().maxAttempts(), run.spec().limits().timeoutRetries(),
            DurationText.text(run.spec().evaluator().caseTimeout()), failFast(run)),
        c.total(), counters(c), EstimateText.Written.percent(c.accuracy().orElse(null)),
        EstimateText.Written.mean(c.meanScore().orElse(null)), usage, paused);
  }

  /** The run's fail-fast setting; null if its option cannot be read. */
  private static Integer failFast(RunView run) {
    try {
      return dev.tally.core.EvaluatorSpec.failFastCases(run.spec().evaluator().options());
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** A run's counters. */
  public static CountersObject counters(RunCounters c) {
    return new CountersObject(c.passed(), c.failed(), RunReport.errored(c), c.recorded(), c.jobsFailed(), c.cancelled(),
        c.duplicatesSuppressed(), c.staleResultsFenced(), c.redeliveries(), c.scored(), c.scoreSum(),
        c.scoreSumOfSquares(), c.backups(), c.ended(), c.judged());
  }

  /**
   * A run's counters from its counters object: the inverse of {@link #counters}, for clients of the API
   * ({@code tally wait} draws {@code tally run}'s progress line from them).
   *
   * @param total the run's cases
   */
  public static RunCounters runCounters(long total, CountersObject c) {
    // The object's errored is the summary's (recorded errors and cases out of attempts); the counters' is the first.
    return RunCounters.builder(total).passed(c.passed()).failed(c.failed()).errored(c.errored() - c.jobsFailed())
        .jobsFailed(c.jobsFailed()).duplicatesSuppressed(c.duplicatesSuppressed()).staleResultsFenced(c.staleResultsFenced())
        .redeliveries(c.redeliveries()).cancelled(c.cancelled()).scores(c.scored(), c.scoreSum(), c.scoreSumOfSquares())
        .backups(c.backups()).build();
  }

  /**
   * An evaluator object: exec with its command, model with its settings (converted by their owner, {@link
   * ModelSettings#toJson}), sleep with its milliseconds if given, noop.
   */
  public static EvaluatorObject evaluator(EvaluatorSpec spec) {
    ObjectNode e = EVALUATOR_JSON.createObjectNode();
    e.put("kind", spec.kind());
    e.put("cmd", spec.options().get("cmd"));
    if ("true".equals(spec.options().get(ServeEvaluator.OPTION))) {
      e.put(ServeEvaluator.OPTION, true);
    }
    String millis = spec.options().get("millis");
    if (millis != null) {
      e.put("millis", Long.valueOf(millis));
    }
    if (spec.kind().equals("model")) {
      e.setAll(ModelSettings.toJson(spec.options()));
    }
    return EVALUATOR_JSON.convertValue(e, EvaluatorObject.class);
  }

  /** Converts an evaluator's fields to its object; thread-safe once built. */
  private static final ObjectMapper EVALUATOR_JSON = new ObjectMapper();

  /**
   * A case object: its job, and the queue time of the attempt that recorded it (null until recorded).
   */
  public static CaseObject caseObject(CaseView view) {
    JobView job = view.job();
    Outcome o = job.outcome();
    boolean done = job.state() == JobState.DONE && o != null;
    Long queued = known(view.timing().queuedMillis());
    return new CaseObject(job.caseId(), job.position(), state(job.state()), verdict(job), done ? o.score() : null,
        job.attempts(), job.worker(), done ? o.durationMillis() : null, queued, done ? o.outputTail() : null,
        job.failureReason(), done ? o.answer() : null, done ? RunReport.fields(o) : null, done ? o.exitCode() : null,
        done ? o.stderrTail() : null);
  }

  /** A job's state in lower case: {@code pending}, {@code leased}, {@code done}, {@code failed}. */
  public static String state(JobState state) {
    return state.name().toLowerCase(Locale.ROOT);
  }

  /** A job's verdict as results.jsonl gives it ({@link JobView#reportedVerdict}, the one rule). */
  public static String verdict(JobView job) {
    return job.reportedVerdict();
  }

  /** An attempt object. */
  public static AttemptObject attempt(AttemptView a) {
    AttemptTiming t = a.timing();
    return new AttemptObject(a.worker(), a.token(), time(a.startedAtMillis()), time(a.endedAtMillis()), a.ending(),
        a.detail(), known(t.runMillis()), known(t.queuedMillis()), a.duplicateResults(), a.fencedResults());
  }

  /** A worker object, its condition at {@code nowMillis} (epoch ms). */
  public static WorkerObject worker(WorkerStatus w, long nowMillis) {
    boolean live = w.connected();
    return new WorkerObject(w.workerId(), w.name(), live ? "live" : "left", w.condition(nowMillis).word(), w.leftReason(),
        live && !w.suspicion().isEmpty() ? w.suspicion() : null, live && w.acceptingWork(),
        live && w.ejectedUntilMillis() > 0 ? time(w.ejectedUntilMillis()) : null, w.ejectionReason(), w.timesEjected(),
        live ? w.inFlight() : 0, time(w.reportedAtMillis()),
        live && !Double.isNaN(w.suspicionLevel()) ? w.suspicionLevel() : null, w.slots() > 0 ? w.slots() : null);
  }

  /** Epoch milliseconds as ISO-8601 UTC ({@code 2026-12-01T14:00:00.123Z}). */
  public static String time(long epochMillis) {
    return Instant.ofEpochMilli(epochMillis).toString();
  }

  private static Long known(long millis) {
    return millis == AttemptTiming.UNKNOWN ? null : millis;
  }
}
