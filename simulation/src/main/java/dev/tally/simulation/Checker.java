package dev.tally.simulation;

import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Verifies DESIGN.md's invariants I1–I5 after a history, from two accounts that must agree: the store as
 * it is at the end (jobs, attempts, counters) and the {@link WorkerLog} the simulated workers kept of what
 * they received, sent and were told. Each violation is one sentence starting with its invariant.
 *
 * <ul>
 *   <li><b>I1 no loss</b>: every job of the run ends in exactly one terminal state — done with an outcome
 *       and exactly one {@code recorded} attempt under its current token, or failed with a reason and none —
 *       and no attempt (job, token) ends twice.
 *   <li><b>I2 no double count</b>: the counters equal the jobs table (recorded = done jobs, by verdict;
 *       jobs failed = failed jobs), never exceed the total, and equal what the coordinator reported on
 *       finishing; no job is acked RECORDED to workers under two different tokens.
 *   <li><b>I3 fencing</b>: a done job's outcome came from the worker that held its token (the log shows
 *       that worker received the assignment and sent the outcome), that token is the highest ever issued
 *       for the job, and its lease had not already ended; every RECORDED ack names the job's current token.
 *   <li><b>I4 progress</b>: the run finished (while a healthy worker remained: the simulation keeps one).
 *   <li><b>I5 durability</b>: every result a worker was acked RECORDED or DUPLICATE for is in the store at
 *       the end, done under that token, across every coordinator restart.
 * </ul>
 *
 * <p>Thread-safety: stateless.
 */
public final class Checker {
  /** At most this many violations are listed per history; the rest are counted. */
  static final int MAX_LISTED = 20;

  private Checker() {}

  /** The violations of {@code history}, empty if it kept every invariant. */
  public static List<String> check(History history) {
    List<String> v = new ArrayList<>();
    RunView run = history.store().run(history.runId()).orElse(null);
    if (run == null) {
      v.add("I1: the run " + history.runId() + " is not in the store");
      return v;
    }
    List<JobView> jobs = history.store().jobs(history.runId());
    List<AttemptView> attempts = history.store().attempts(history.runId());
    RunCounters c = run.counters();
    Map<Long, JobView> byId = new LinkedHashMap<>();
    jobs.forEach(j -> byId.put(j.jobId(), j));

    // Attempts per job; each (job, token) ends once.
    Map<Long, List<AttemptView>> attemptsByJob = new HashMap<>();
    Set<String> endedAttempts = new HashSet<>();
    for (AttemptView a : attempts) {
      attemptsByJob.computeIfAbsent(a.jobId(), k -> new ArrayList<>()).add(a);
      if (!endedAttempts.add(a.jobId() + "/" + a.token())) {
        v.add("I1: attempt (job " + a.jobId() + ", token " + a.token() + ") ended twice in the attempt history");
      }
    }

    // What the workers saw.
    Map<Long, Long> maxTokenIssued = new HashMap<>();
    Set<String> assigned = new HashSet<>();
    Set<String> sentOutcome = new HashSet<>();
    Map<Long, Set<Long>> recordedAckTokens = new LinkedHashMap<>();
    for (WorkerLog.Entry e : history.log().entries()) {
      String key = e.worker() + "/" + e.jobId() + "/" + e.token();
      switch (e.kind()) {
        case ASSIGNED -> {
          assigned.add(key);
          maxTokenIssued.merge(e.jobId(), e.token(), Math::max);
        }
        case SENT_OUTCOME -> sentOutcome.add(key);
        case ACKED -> {
          if (e.detail().equals("RECORDED")) {
            recordedAckTokens.computeIfAbsent(e.jobId(), k -> new java.util.TreeSet<>()).add(e.token());
          }
          if (e.detail().equals("RECORDED") || e.detail().equals("DUPLICATE")) {
            JobView j = byId.get(e.jobId());
            if (j == null || j.state() != JobState.DONE) {
              v.add("I5: " + e.worker() + " was acked " + e.detail() + " for job " + e.jobId() + " token " + e.token()
                  + " at " + e.atMillis() + " ms, but the store has the job " + (j == null ? "missing" : j.state()));
            } else if (j.token() != e.token()) {
              v.add("I3: " + e.worker() + " was acked " + e.detail() + " for job " + e.jobId() + " under token "
                  + e.token() + " at " + e.atMillis() + " ms, but the job is done under token " + j.token()
                  + ": an outcome from a stale token was accepted");
            }
          }
        }
        default -> { }
      }
    }
    recordedAckTokens.forEach((jobId, tokens) -> {
      if (tokens.size() > 1) {
        v.add("I2: job " + jobId + " was acked RECORDED under tokens " + tokens + ": counted more than once");
      }
    });

    // I1 and I3, job by job.
    long done = 0;
    long failed = 0;
    long pass = 0;
    long fail = 0;
    long error = 0;
    List<String> open = new ArrayList<>();
    for (JobView j : jobs) {
      List<AttemptView> mine = attemptsByJob.getOrDefault(j.jobId(), List.of());
      List<AttemptView> recorded = mine.stream().filter(a -> a.ending().equals("recorded")).toList();
      switch (j.state()) {
        case DONE -> {
          done++;
          if (j.outcome() == null) {
            v.add("I1: job " + j.jobId() + " is done without an outcome");
          } else {
            switch (j.outcome().verdict()) {
              case PASS -> pass++;
              case FAIL -> fail++;
              case ERROR -> error++;
            }
          }
          if (recorded.size() != 1 || recorded.get(0).token() != j.token()) {
            v.add("I1: job " + j.jobId() + " is done under token " + j.token() + " but its recorded attempts are "
                + recorded.stream().map(AttemptView::token).toList());
          }
          long t = j.token();
          String holder = j.worker() + "/" + j.jobId() + "/" + t;
          if (!assigned.contains(holder)) {
            v.add("I3: job " + j.jobId() + " was recorded from " + j.worker() + " under token " + t
                + ", which that worker never received");
          } else if (!sentOutcome.contains(holder)) {
            v.add("I3: job " + j.jobId() + " was recorded from " + j.worker() + " under token " + t
                + ", for which that worker sent no outcome");
          }
          long maxIssued = Math.max(maxTokenIssued.getOrDefault(j.jobId(), 0L),
              mine.stream().mapToLong(AttemptView::token).max().orElse(0));
          if (maxIssued > t) {
            v.add("I3: job " + j.jobId() + " was recorded under token " + t + " although token " + maxIssued
                + " had been issued: a stale holder's outcome was accepted");
          }
          for (AttemptView a : mine) {
            if (a.token() == t && !a.ending().equals("recorded")) {
              v.add("I3: job " + j.jobId() + " was recorded under token " + t + " after that lease had ended ("
                  + a.ending() + ")");
            }
          }
        }
        case FAILED -> {
          failed++;
          if (j.failureReason() == null || j.failureReason().isBlank()) {
            v.add("I1: job " + j.jobId() + " ended failed without a reason");
          }
          if (!recorded.isEmpty()) {
            v.add("I1: job " + j.jobId() + " ended failed but has a recorded outcome");
          }
        }
        default -> open.add(j.jobId() + ":" + j.state().name().toLowerCase(java.util.Locale.ROOT));
      }
    }
    if (jobs.size() != history.cases()) {
      v.add("I1: the run has " + jobs.size() + " jobs for " + history.cases() + " cases");
    }
    if (!open.isEmpty() && run.finished()) {
      v.add("I1: the run is marked finished but " + open.size() + " jobs never ended: " + clip(open));
    }

    // I2: counters against the jobs table, the total, and what the coordinator reported.
    if (c.recorded() != done || c.passed() != pass || c.failed() != fail || c.errored() != error) {
      v.add("I2: counters say " + c.recorded() + " recorded (" + c.passed() + " pass, " + c.failed() + " fail, "
          + c.errored() + " error) but " + done + " jobs are done (" + pass + ", " + fail + ", " + error + ")");
    }
    if (c.jobsFailed() != failed) {
      v.add("I2: counters say " + c.jobsFailed() + " jobs failed but " + failed + " jobs are failed");
    }
    if (c.recorded() + c.jobsFailed() > c.total() || c.total() != history.cases()) {
      v.add("I2: counters " + c + " exceed or misstate the total of " + history.cases());
    }
    if (history.reportedCounters() != null && !history.reportedCounters().equals(c)) {
      v.add("I2: the coordinator reported " + history.reportedCounters() + " on finishing, the store holds " + c);
    }

    // I4.
    if (!history.finished() || !run.finished()) {
      v.add("I4: the run did not finish (" + history.endReason() + ") although a healthy worker "
          + (history.healthyWorkerRemained() ? "remained" : "was being replaced") + "; " + open.size()
          + " jobs never ended: " + clip(open));
    }

    // The connection actor's contract with the scheduler, as the WorkerEventsChecker saw it.
    for (String breach : history.contractViolations()) {
      v.add("WE: " + breach);
    }

    if (v.size() > MAX_LISTED) {
      int more = v.size() - MAX_LISTED;
      List<String> shown = new ArrayList<>(v.subList(0, MAX_LISTED));
      shown.add("... and " + more + " more violations");
      return shown;
    }
    return v;
  }

  private static String clip(List<String> items) {
    return items.size() <= 10 ? items.toString() : items.subList(0, 10) + " and " + (items.size() - 10) + " more";
  }
}
