package dev.tally.simulation;

import dev.tally.core.store.AttemptView;
import dev.tally.core.store.BatchRules;
import dev.tally.core.store.RunState;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The one invariant checker: DESIGN.md's I1–I5 for a run, checked after the fact. The simulation holds
 * each history to it ({@link #check(History)}), and {@code tally chaos} each run of real processes
 * ({@link #checkRun(Store, long, List)}). Each violation is one sentence that starts with its invariant.
 *
 * <p><b>From the store alone</b> ({@link #checkRun}), what any store at the end of a run must show:
 *
 * <ul>
 *   <li><b>I1 no loss</b>: the run's jobs are its cases (in dataset order, when the ids are known); every
 *       job of an ended run (finished or cancelled) is in exactly one terminal state — done with an outcome,
 *       no failure reason and exactly one {@code recorded} attempt, under its current token; or failed with
 *       a reason, no outcome and no recorded attempt; or cancelled (only in a cancelled run) with no outcome
 *       and no recorded attempt, ever: a cancelled job is never recorded afterwards; every lease a job was
 *       given ended exactly once: an ended job's attempts carry the tokens 1..n with no gap and no repeat,
 *       n its attempt count (backups included: each is a lease);
 *   <li><b>I2 no double count</b>: the counters equal the jobs table (passed, failed, errored by verdict;
 *       jobs failed; cancelled; the score moments), recorded equals the number of distinct jobs with a recorded attempt and, with the
 *       jobs failed, never exceeds the total, which is the number of cases; redeliveries equal the attempts
 *       that put their job back in the queue (every ended attempt not recorded, not cancelled, not abandoned
 *       and not dropped, except the last of a failed job);
 *   <li><b>I3 fencing</b> by the set of live attempts, as the store shows it: a done job's outcome was
 *       recorded under a lease that was live: that lease had not already ended otherwise, and every lease
 *       with a higher token was live beside it (it ended {@code abandoned} by the record, or {@code dropped}
 *       while the recorded one went on): a lease that put the job back in the queue after the recorded one
 *       was issued means the recorded one had ended, and a stale holder's outcome was accepted. Leases
 *       follow one another in time (one is issued only after the previous ended) unless the earlier one
 *       ended without putting its job back (a backup ran beside it), and none is issued, none starts,
 *       after the outcome was recorded (a duplicate of a recorded job may have been <i>started</i> earlier
 *       and ended later as fenced: that leaves no attempt row and is fine);
 *   <li><b>I4 progress</b>: the run ended (finished, or cancelled).
 * </ul>
 *
 * <p><b>From the workers' own account</b> ({@link #check(History)} adds, from the simulation's {@link
 * WorkerLog}): I2, no job is acked RECORDED under two different tokens, and the counters equal what the
 * coordinator reported on finishing; I3, a done job's outcome came from the worker that held its token
 * (the log shows that worker received the assignment and sent the outcome), every token above it that was
 * assigned belonged to an attempt live beside it (abandoned or dropped), and every RECORDED or DUPLICATE
 * ack names the job's recorded token; I5 durability, every result
 * a worker was acked RECORDED or DUPLICATE for is in the store at the end, done, across every coordinator
 * restart.
 *
 * <p><b>Fair share</b> ({@link #check(History)} adds, as violations that start with {@code FS:}): what {@link
 * FairShareWatch} saw: a run with leasable jobs passed over, batch after batch, while runs holding more leases
 * got new ones.
 *
 * <p><b>The leader rule</b> ({@link #check(History)} adds, as violations that start with {@code EPOCH:}; {@link
 * #checkEpochs}): over the history's {@link EpochLedger}, in the store's commit order, each epoch taken is
 * higher than every one before it, and no coordinator's write committed under an epoch after a higher epoch
 * took the lead, nor under no epoch at all (a standby's, or an unfenced one): a leader frozen past its lease
 * and thawed after a takeover writes nothing.
 *
 * <p><b>The connection actor's contract</b> ({@link #check(History)} adds, as violations that start with
 * {@code WE:}): what {@code WorkerEventsChecker} saw of the {@code WorkerEvents} the connection cores
 * reported to the scheduler: a session's event after its loss (or before its join, or a second join or
 * loss), or two live sessions of one worker at once. Not an invariant of the store, but the promise the
 * scheduler builds I1–I4 on: a violation here is a bug in the connection actor even when the store
 * happens to come out right.
 *
 * <p>Thread-safety: stateless.
 */
public final class Checker {
  /** At most this many violations are listed per simulated history; the rest are counted. */
  static final int MAX_LISTED = 20;

  private Checker() {}

  /**
   * What one run's check found.
   *
   * @param runId the run
   * @param counters its counters as stored, or null if the run is not in the store
   * @param doneJobs jobs done (with an outcome)
   * @param failedJobs jobs that ended failed
   * @param violations each a sentence starting with its invariant; empty if the run kept them all
   */
  public record RunCheck(long runId, RunCounters counters, long doneJobs, long failedJobs, List<String> violations) {
    public RunCheck {
      violations = List.copyOf(violations);
    }
  }

  /**
   * Checks one run from the store alone (see the class doc), for a dataset whose case ids are known.
   *
   * @param store the store, as it is after the run
   * @param runId the run
   * @param caseIds the dataset's case ids, in dataset order
   * @return what the check found; every violation, unabridged
   */
  public static RunCheck checkRun(Store store, long runId, List<String> caseIds) {
    return checkRun(store, runId, caseIds.size(), caseIds);
  }

  /** As {@link #checkRun(Store, long, List)}; {@code caseIds} null when only their number is known. */
  private static RunCheck checkRun(Store store, long runId, int cases, List<String> caseIds) {
    RunView run = store.run(runId).orElse(null);
    if (run == null) {
      return new RunCheck(runId, null, 0, 0, List.of("I1: run " + runId + " is not in the store"));
    }
    return checkRun(store, run, store.jobs(runId), cases, caseIds);
  }

  /** The store checks on a run and its jobs, already read. */
  private static RunCheck checkRun(Store store, RunView run, List<JobView> jobs, int cases, List<String> caseIds) {
    List<String> v = new ArrayList<>();
    long runId = run.runId();
    String r = "run " + runId + ": ";
    RunCounters c = run.counters();
    Map<Long, List<AttemptView>> attemptsByJob = new HashMap<>();
    Set<String> endedAttempts = new HashSet<>();
    for (AttemptView a : store.attempts(runId)) {
      attemptsByJob.computeIfAbsent(a.jobId(), k -> new ArrayList<>()).add(a);
      if (!endedAttempts.add(a.jobId() + "/" + a.token())) {
        v.add("I1: " + r + "attempt (job " + a.jobId() + ", token " + a.token() + ") ended twice in the attempt history");
      }
    }

    if (caseIds != null && !jobs.stream().map(JobView::caseId).toList().equals(caseIds)) {
      v.add("I1: " + r + "its jobs are not the dataset's cases in dataset order (" + jobs.size() + " jobs, " + caseIds.size() + " cases)");
    } else if (jobs.size() != cases) {
      v.add("I1: " + r + "the run has " + jobs.size() + " jobs for " + cases + " cases");
    }

    long done = 0;
    long failedJobs = 0;
    long cancelledJobs = 0;
    long pass = 0;
    long fail = 0;
    long error = 0;
    long scored = 0;
    double scoreSum = 0;
    long requeued = 0;
    Set<Long> recordedJobs = new HashSet<>();
    List<String> open = new ArrayList<>();
    for (JobView j : jobs) {
      String q = r + "case " + j.caseId() + " (job " + j.jobId() + "): ";
      List<AttemptView> mine = new ArrayList<>(attemptsByJob.getOrDefault(j.jobId(), List.of()));
      mine.sort(Comparator.comparingLong(AttemptView::token));
      List<AttemptView> recorded = mine.stream().filter(a -> a.ending().equals("recorded")).toList();
      if (!recorded.isEmpty()) {
        recordedJobs.add(j.jobId());
      }
      switch (j.state()) {
        case DONE -> {
          done++;
          if (j.outcome() == null) {
            v.add("I1: " + q + "is done without an outcome");
          } else {
            switch (j.outcome().verdict()) {
              case PASS -> pass++;
              case FAIL -> fail++;
              case ERROR -> error++;
            }
            if (j.outcome().score() != null) {
              scored++;
              scoreSum += j.outcome().score();
            }
          }
          if (j.failureReason() != null) {
            v.add("I1: " + q + "is done and has a failure reason too");
          }
          if (recorded.size() != 1 || recorded.get(0).token() != j.token()) {
            v.add("I1: " + q + "is done under token " + j.token() + " but its recorded attempts are "
                + recorded.stream().map(AttemptView::token).toList());
          }
          for (AttemptView a : mine) {
            if (a.token() > j.token() && !livedBeside(a)) {
              v.add("I3: " + q + "was recorded under token " + j.token() + " although token " + a.token()
                  + " had been issued and ended " + a.ending() + ": a stale holder's outcome was accepted");
            }
          }
          for (AttemptView a : mine) {
            if (a.token() == j.token() && !a.ending().equals("recorded")) {
              v.add("I3: " + q + "was recorded under token " + j.token() + " after that lease had ended (" + a.ending() + ")");
            }
          }
          if (recorded.size() == 1) {
            AttemptView rec = recorded.get(0);
            for (AttemptView a : mine) {
              if (a != rec && a.startedAtMillis() > rec.endedAtMillis()) {
                v.add("I3: " + q + "attempt " + a.token() + " (" + a.ending() + ") started at " + a.startedAtMillis()
                    + ", after the outcome was recorded at " + rec.endedAtMillis());
              }
            }
          }
        }
        case FAILED -> {
          failedJobs++;
          if (j.failureReason() == null || j.failureReason().isBlank()) {
            v.add("I1: " + q + "ended failed without a reason");
          }
          if (j.outcome() != null) {
            v.add("I1: " + q + "ended failed and has an outcome too");
          }
          if (!recorded.isEmpty()) {
            v.add("I1: " + q + "ended failed but has a recorded attempt");
          }
        }
        case CANCELLED -> {
          cancelledJobs++;
          if (run.state() != RunState.CANCELLED) {
            v.add("I1: " + q + "is cancelled but its run is " + run.state().wireName());
          }
          if (j.outcome() != null || j.failureReason() != null) {
            v.add("I1: " + q + "is cancelled and has an outcome or a failure reason too");
          }
          if (!recorded.isEmpty()) {
            v.add("I1: " + q + "is cancelled but has a recorded attempt: a cancelled job was recorded");
          }
        }
        default -> {
          open.add(j.caseId() + ":" + j.state().name().toLowerCase(Locale.ROOT));
          if (run.ended()) {
            v.add("I1: " + q + "is not in a terminal state (" + j.state().name().toLowerCase(Locale.ROOT) + ")");
          }
        }
      }
      // Every lease ended exactly once, in token order and in time order; a job leased now has all but
      // its current lease ended.
      // A job leased now may have live attempts (its own lease, a backup) whose tokens are not ended yet.
      long issued = Math.max(j.token(), mine.isEmpty() ? 0 : mine.get(mine.size() - 1).token());
      boolean contiguous = j.state() == JobState.LEASED ? mine.stream().map(AttemptView::token).distinct().count() == mine.size()
          && mine.stream().noneMatch(a -> a.token() == j.token()) : mine.size() == issued;
      for (int i = 0; i < mine.size() && contiguous && j.state() != JobState.LEASED; i++) {
        contiguous = mine.get(i).token() == i + 1;
      }
      if (!contiguous) {
        v.add("I1: " + q + "leases 1.." + issued + " were issued" + (j.state() == JobState.LEASED ? " (some still held)" : "")
            + " but the ended attempts have tokens " + mine.stream().map(AttemptView::token).toList());
      }
      // One lease per attempt, but for hand-backs: a draining worker's unstarted job is not charged.
      long handedBack = mine.stream().filter(a -> a.ending().equals(HANDED_BACK)).count();
      if (j.state() != JobState.LEASED && j.attempts() + handedBack != issued) {
        v.add("I1: " + q + "attempts " + j.attempts() + " (and " + handedBack + " handed back) but " + issued + " leases");
      }
      for (int i = 1; i < mine.size(); i++) {
        // Two leases overlap only while a backup runs: then at most one of them put the job back in the queue,
        // and only as the last to end (a job goes back when its last live attempt ends).
        if (mine.get(i).startedAtMillis() < mine.get(i - 1).endedAtMillis() && !overlapAllowed(mine.get(i - 1), mine.get(i))) {
          v.add("I3: " + q + "lease " + mine.get(i).token() + " was issued at " + mine.get(i).startedAtMillis()
              + ", before lease " + mine.get(i - 1).token() + " ended at " + mine.get(i - 1).endedAtMillis());
        }
      }
      long cancelledAttempts = mine.stream().filter(a -> a.ending().equals(BatchRules.CANCELLED_ENDING)).count();
      long livedBeside = mine.stream().filter(Checker::livedBeside).count();
      // The last of a failed job's attempts to end is the one that failed it (not a redelivery).
      requeued += mine.size() - recorded.size() - cancelledAttempts - livedBeside
          - (j.state() == JobState.FAILED && !mine.isEmpty() ? 1 : 0);
    }
    if (run.ended() && !open.isEmpty()) {
      v.add("I1: " + r + "is marked " + run.state().wireName() + " but " + open.size() + " jobs never ended: " + clip(open));
    }

    if (c.recorded() != done || c.passed() != pass || c.failed() != fail || c.errored() != error) {
      v.add("I2: " + r + "counters say " + c.recorded() + " recorded (" + c.passed() + " pass, " + c.failed() + " fail, "
          + c.errored() + " error) but " + done + " jobs are done (" + pass + ", " + fail + ", " + error + ")");
    }
    // The mean score is read from the counters: their score moments must be the done jobs' scores.
    if (c.scored() != scored || Math.abs(c.scoreSum() - scoreSum) > 1e-9 * Math.max(1, Math.abs(scoreSum))) {
      v.add("I2: " + r + "counters say " + c.scored() + " scores summing to " + c.scoreSum() + " but the done jobs have "
          + scored + " summing to " + scoreSum);
    }
    if (c.jobsFailed() != failedJobs) {
      v.add("I2: " + r + "counters say " + c.jobsFailed() + " jobs failed but " + failedJobs + " jobs are failed");
    }
    if (c.cancelled() != cancelledJobs) {
      v.add("I2: " + r + "counters say " + c.cancelled() + " jobs cancelled but " + cancelledJobs + " jobs are cancelled");
    }
    if (c.ended() > c.total() || c.total() != cases) {
      v.add("I2: " + r + "counters " + c + " exceed or misstate the total of " + cases + " cases");
    }
    if (recordedJobs.size() != c.recorded()) {
      v.add("I2: " + r + "counters say " + c.recorded() + " recorded, but " + recordedJobs.size() + " distinct jobs have a recorded attempt");
    }
    if (requeued != c.redeliveries()) {
      v.add("I2: " + r + "redeliveries " + c.redeliveries() + " but " + requeued + " ended attempts put their job back in the queue");
    }

    if (!run.ended()) {
      v.add("I4: " + r + "did not finish: " + c.ended() + " of " + c.total()
          + " cases ended, and each case listed is not in a terminal state: " + clip(open));
    }
    return new RunCheck(runId, c, done, failedJobs, v);
  }

  /**
   * The violations of a simulated history, empty if it kept every invariant: {@link #checkRun} on its
   * store, and the store held to the workers' own log (see the class doc). At most {@value #MAX_LISTED}
   * are listed; the rest are counted.
   */
  public static List<String> check(History history) {
    Store store = history.store();
    List<String> v = new ArrayList<>();
    Map<Long, JobView> byId = new LinkedHashMap<>();
    Map<String, AttemptView> attemptsByKey = new HashMap<>();
    for (long runId : history.runIds()) {
      RunView stored = store.run(runId).orElse(null);
      if (stored == null) {
        v.add("I1: run " + runId + " is not in the store");
        continue;
      }
      List<JobView> jobs = store.jobs(runId);
      RunCheck run = checkRun(store, stored, jobs, history.casesByRun().get(runId), null);
      v.addAll(run.violations());
      jobs.forEach(j -> byId.put(j.jobId(), j));
      store.attempts(runId).forEach(a -> attemptsByKey.put(a.jobId() + "/" + a.token(), a));
      RunCounters reported = history.reportedCounters().get(runId);
      if (reported != null && !endState(reported).equals(endState(run.counters()))) {
        v.add("I2: the coordinator reported " + reported + " as run " + runId + " ended, the store holds " + run.counters());
      }
    }

    // What the workers saw.
    Map<Long, Set<Long>> tokensAssigned = new HashMap<>();
    Set<String> assigned = new HashSet<>();
    Set<String> sentOutcome = new HashSet<>();
    Map<Long, Set<Long>> recordedAckTokens = new LinkedHashMap<>();
    for (WorkerLog.Entry e : history.log().entries()) {
      String key = e.worker() + "/" + e.jobId() + "/" + e.token();
      switch (e.kind()) {
        case ASSIGNED -> {
          assigned.add(key);
          tokensAssigned.computeIfAbsent(e.jobId(), k -> new TreeSet<>()).add(e.token());
        }
        case SENT_OUTCOME -> sentOutcome.add(key);
        case ACKED -> {
          if (e.detail().equals("RECORDED")) {
            recordedAckTokens.computeIfAbsent(e.jobId(), k -> new TreeSet<>()).add(e.token());
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
    for (JobView j : byId.values()) {
      if (j.state() != JobState.DONE) {
        continue;
      }
      String holder = j.worker() + "/" + j.jobId() + "/" + j.token();
      if (!assigned.contains(holder)) {
        v.add("I3: job " + j.jobId() + " was recorded from " + j.worker() + " under token " + j.token()
            + ", which that worker never received");
      } else if (!sentOutcome.contains(holder)) {
        v.add("I3: job " + j.jobId() + " was recorded from " + j.worker() + " under token " + j.token()
            + ", for which that worker sent no outcome");
      }
      for (long issued : tokensAssigned.getOrDefault(j.jobId(), Set.of())) {
        AttemptView a = attemptsByKey.get(j.jobId() + "/" + issued);
        if (issued > j.token() && (a == null || !livedBeside(a))) {
          v.add("I3: job " + j.jobId() + " was recorded under token " + j.token() + " although token " + issued
              + " had been assigned to a worker and " + (a == null ? "never ended" : "ended " + a.ending())
              + ": a stale holder's outcome was accepted");
        }
      }
    }
    if (!history.finished() || v.stream().anyMatch(s -> s.startsWith("I4: "))) {
      v.add("I4: the history ended (" + history.endReason() + ") without every run ending, although a healthy worker "
          + (history.healthyWorkerRemained() ? "remained" : "was being replaced"));
    }
    v.addAll(history.fairShareViolations());

    // The connection actor's contract with the scheduler, as the WorkerEventsChecker saw it.
    for (String breach : history.contractViolations()) {
      v.add("WE: " + breach);
    }
    v.addAll(checkEpochs(history.epochs()));
    // The worker port's door: a process without the fleet's token must never join.
    for (String breach : history.securityViolations()) {
      v.add("AUTH: " + breach);
    }

    if (v.size() > MAX_LISTED) {
      int more = v.size() - MAX_LISTED;
      List<String> shown = new ArrayList<>(v.subList(0, MAX_LISTED));
      shown.add("... and " + more + " more violations");
      return shown;
    }
    return v;
  }

  /**
   * The leader rule over one history's ledger (see the class doc): each violation starts with {@code EPOCH:}.
   *
   * @param epochs the ledger's entries, in the store's commit order
   * @return the violations, empty if the rule held
   */
  static List<String> checkEpochs(List<EpochLedger.Entry> epochs) {
    List<String> v = new ArrayList<>();
    long highest = 0;
    long highestAtMillis = 0;
    for (EpochLedger.Entry e : epochs) {
      switch (e.kind()) {
        case LEAD -> {
          if (e.epoch() <= highest) {
            v.add("EPOCH: coordinator " + e.coordinator() + " took epoch " + e.epoch() + " at " + e.atMillis()
                + " ms, after epoch " + highest + " had led: epochs never go back");
          }
          if (e.epoch() > highest) {
            highest = e.epoch();
            highestAtMillis = e.atMillis();
          }
        }
        case WRITE -> {
          if (e.epoch() < 1) {
            v.add("EPOCH: coordinator " + e.coordinator() + " committed a write (" + e.what() + ") at " + e.atMillis()
                + " ms under " + (e.epoch() == Store.NOT_LEADING ? "no epoch (a standby)" : "no fence (unfenced)"));
          } else if (e.epoch() < highest) {
            v.add("EPOCH: coordinator " + e.coordinator() + " committed a write (" + e.what() + ") under epoch " + e.epoch()
                + " at " + e.atMillis() + " ms, after epoch " + highest + " took the lead at " + highestAtMillis + " ms");
          }
        }
        case REFUSED -> { }
      }
    }
    return v;
  }

  /**
   * The counters a run ends with, less the two that results arriving after its end still move (late
   * duplicates and fenced results are counted, and change nothing else).
   */
  private static RunCounters endState(RunCounters c) {
    return new RunCounters(c.total(), c.passed(), c.failed(), c.errored(), c.jobsFailed(), 0, 0, c.redeliveries(),
        c.cancelled(), c.scored(), c.scoreSum(), c.scoreSumOfSquares(), c.promptTokens(), c.completionTokens(), c.backups());
  }

  /**
   * Whether an ended attempt lived beside another attempt of its job (speculative execution): abandoned
   * when the other was recorded, or dropped while the other went on. Neither put its job back in the queue.
   */
  private static boolean livedBeside(AttemptView a) {
    return a.ending().equals(BatchRules.ABANDONED_ENDING) || a.ending().equals(BatchRules.DROPPED_ENDING);
  }

  /**
   * Whether two leases of one job that were live at once could both have been: at most one put the job back,
   * and that one ended last.
   */
  private static boolean overlapAllowed(AttemptView earlier, AttemptView later) {
    if (keptJob(earlier) && keptJob(later)) {
      return true;
    }
    if (keptJob(earlier)) {
      return later.endedAtMillis() >= earlier.endedAtMillis();
    }
    return keptJob(later) && earlier.endedAtMillis() >= later.endedAtMillis();
  }

  /** Whether an ended attempt left its job where it was (recorded, cancelled, or beside another attempt). */
  private static boolean keptJob(AttemptView a) {
    return livedBeside(a) || a.ending().equals("recorded") || a.ending().equals(BatchRules.CANCELLED_ENDING);
  }

  /** How a hand-back's attempt ends in the history. */
  private static final String HANDED_BACK = dev.tally.core.RedeliveryPolicy.endingName(dev.tally.core.InfraFailure.Kind.HANDED_BACK);

  private static String clip(List<String> items) {
    return items.size() <= 10 ? items.toString() : items.subList(0, 10) + " and " + (items.size() - 10) + " more";
  }
}
