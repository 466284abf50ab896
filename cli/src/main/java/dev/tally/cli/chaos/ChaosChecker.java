package dev.tally.cli.chaos;

import dev.tally.cli.*;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The invariants a chaos run checks after the fact, for one run, from the store and the results file
 * (DESIGN.md section 3, as far as a store and a results file can show them):
 *
 * <ul>
 *   <li>the run finished, and its jobs are the dataset's cases in dataset order;
 *   <li>every job is in exactly one terminal state: {@code done} with an outcome, or {@code failed} with a
 *       reason and no outcome;
 *   <li>the counters equal what the jobs say (passed, failed, errored, ended failed), so recorded equals the
 *       number of distinct recorded jobs, and never exceeds the total;
 *   <li>each done job has exactly one attempt that ended {@code recorded}, a failed job none;
 *   <li>every lease a job was given ended exactly once: its attempts carry the tokens 1..token with no gap
 *       and no repeat, one after the other in time (a lease is issued only after the previous one ended);
 *   <li>no lease was issued for a job after its outcome was recorded: the recorded attempt is the job's last
 *       token, and no attempt of the job started after it ended (a duplicate of a recorded job may have
 *       been <i>started</i> earlier and ended later as fenced: that leaves no attempt row and is fine);
 *   <li>redeliveries equal the attempts that put their job back in the queue (every ended attempt that was
 *       not recorded, except the last of each failed job);
 *   <li>the results file has exactly one line per case, in dataset order, with the store's verdict.
 * </ul>
 */
public final class ChaosChecker {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ChaosChecker() {}

  /** What one run's check found. */
  record RunCheck(long runId, RunCounters counters, long doneJobs, long failedJobs, List<String> violations) {}

  static RunCheck check(Store store, long runId, List<String> caseIds, Path resultsFile) {
    List<String> v = new ArrayList<>();
    Optional<RunView> maybeRun = store.run(runId);
    if (maybeRun.isEmpty()) {
      v.add("run " + runId + " is not in the store");
      return new RunCheck(runId, null, 0, 0, v);
    }
    RunView run = maybeRun.get();
    RunCounters c = run.counters();
    String p = "run " + runId + ": ";
    if (!run.finished()) {
      v.add(p + "did not finish (" + (c.recorded() + c.jobsFailed()) + " of " + c.total() + " cases ended)");
    }
    if (c.total() != caseIds.size()) {
      v.add(p + "total " + c.total() + " but the dataset has " + caseIds.size() + " cases");
    }

    List<JobView> jobs = store.jobs(runId);
    List<String> jobIds = jobs.stream().map(JobView::caseId).toList();
    if (!jobIds.equals(caseIds)) {
      v.add(p + "its jobs are not the dataset's cases in dataset order (" + jobs.size() + " jobs, " + caseIds.size() + " cases)");
    }

    long done = 0;
    long failedJobs = 0;
    long passed = 0;
    long failed = 0;
    long errored = 0;
    for (JobView j : jobs) {
      if (j.state() == JobState.DONE) {
        done++;
        if (j.outcome() == null) {
          v.add(p + "case " + j.caseId() + " is done with no outcome");
          continue;
        }
        if (j.failureReason() != null) {
          v.add(p + "case " + j.caseId() + " is done and has a failure reason too");
        }
        switch (j.outcome().verdict()) {
          case PASS -> passed++;
          case FAIL -> failed++;
          default -> errored++;
        }
      } else if (j.state() == JobState.FAILED) {
        failedJobs++;
        if (j.outcome() != null) {
          v.add(p + "case " + j.caseId() + " ended failed and has an outcome too");
        }
      } else {
        v.add(p + "case " + j.caseId() + " is not in a terminal state (" + j.state() + ")");
      }
    }
    if (c.passed() != passed || c.failed() != failed || c.errored() != errored || c.jobsFailed() != failedJobs) {
      v.add(p + "counters (passed " + c.passed() + ", failed " + c.failed() + ", errored " + c.errored() + ", ended failed "
          + c.jobsFailed() + ") differ from the jobs (" + passed + ", " + failed + ", " + errored + ", " + failedJobs + ")");
    }
    if (c.recorded() + c.jobsFailed() > c.total()) {
      v.add(p + "counts " + (c.recorded() + c.jobsFailed()) + " ended cases of " + c.total());
    }

    Map<Long, List<AttemptView>> byJob = new HashMap<>();
    for (AttemptView a : store.attempts(runId)) {
      byJob.computeIfAbsent(a.jobId(), k -> new ArrayList<>()).add(a);
    }
    long requeued = 0;
    Set<Long> recordedJobs = new HashSet<>();
    for (JobView j : jobs) {
      List<AttemptView> as = new ArrayList<>(byJob.getOrDefault(j.jobId(), List.of()));
      as.sort((a, b) -> Long.compare(a.token(), b.token()));
      String q = p + "case " + j.caseId() + ": ";
      List<AttemptView> recorded = as.stream().filter(a -> a.ending().equals("recorded")).toList();
      long expectedRecorded = j.state() == JobState.DONE ? 1 : 0;
      if (recorded.size() != expectedRecorded) {
        v.add(q + recorded.size() + " attempts ended recorded (state " + j.state().name().toLowerCase() + ", expected "
            + expectedRecorded + ")");
      }
      if (!recorded.isEmpty()) {
        recordedJobs.add(j.jobId());
      }
      // Every lease ended exactly once, in token order and in time order.
      boolean contiguous = as.size() == j.token();
      for (int i = 0; i < as.size() && contiguous; i++) {
        contiguous = as.get(i).token() == i + 1;
      }
      if (!contiguous) {
        v.add(q + "leases 1.." + j.token() + " were issued but the ended attempts have tokens "
            + as.stream().map(AttemptView::token).toList());
      }
      if (j.attempts() != j.token()) {
        v.add(q + "attempts " + j.attempts() + " but token " + j.token());
      }
      for (int i = 1; i < as.size(); i++) {
        if (as.get(i).startedAtMillis() < as.get(i - 1).endedAtMillis()) {
          v.add(q + "lease " + as.get(i).token() + " was issued at " + as.get(i).startedAtMillis() + ", before lease "
              + as.get(i - 1).token() + " ended at " + as.get(i - 1).endedAtMillis());
        }
      }
      if (recorded.size() == 1) {
        AttemptView r = recorded.get(0);
        if (r.token() != j.token()) {
          v.add(q + "a lease (token " + j.token() + ") was issued after its outcome was recorded under token " + r.token());
        }
        for (AttemptView a : as) {
          if (a != r && a.startedAtMillis() > r.endedAtMillis()) {
            v.add(q + "attempt " + a.token() + " (" + a.ending() + ") started at " + a.startedAtMillis()
                + ", after the outcome was recorded at " + r.endedAtMillis());
          }
        }
      }
      requeued += as.size() - recorded.size() - (j.state() == JobState.FAILED && !as.isEmpty() ? 1 : 0);
    }
    if (recordedJobs.size() != c.recorded()) {
      v.add(p + "counters say " + c.recorded() + " recorded, but " + recordedJobs.size() + " distinct jobs have a recorded attempt");
    }
    if (requeued != c.redeliveries()) {
      v.add(p + "redeliveries " + c.redeliveries() + " but " + requeued + " ended attempts put their job back in the queue");
    }

    checkResults(p, jobs, caseIds, resultsFile, v);
    return new RunCheck(runId, c, done, failedJobs, v);
  }

  private static void checkResults(String p, List<JobView> jobs, List<String> caseIds, Path resultsFile, List<String> v) {
    List<String> lines;
    try {
      lines = Files.readAllLines(resultsFile, StandardCharsets.UTF_8);
    } catch (IOException e) {
      v.add(p + "cannot read its results file " + resultsFile + ": " + e);
      return;
    }
    if (lines.size() != caseIds.size()) {
      v.add(p + "results file " + resultsFile.getFileName() + " has " + lines.size() + " lines for " + caseIds.size() + " cases");
    }
    Map<String, String> verdictOf = new HashMap<>();
    for (JobView j : jobs) {
      verdictOf.put(j.caseId(), j.state() == JobState.DONE && j.outcome() != null ? j.outcome().verdict().wireName() : "error");
    }
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < lines.size(); i++) {
      JsonNode row;
      try {
        row = JSON.readTree(lines.get(i));
      } catch (IOException e) {
        v.add(p + "results line " + (i + 1) + " is not JSON: " + e.getMessage());
        continue;
      }
      String id = row.path("id").asText(null);
      if (id == null || !seen.add(id)) {
        v.add(p + "results line " + (i + 1) + ": id " + id + (id == null ? " missing" : " appears again"));
        continue;
      }
      if (i < caseIds.size() && !id.equals(caseIds.get(i))) {
        v.add(p + "results line " + (i + 1) + " is " + id + ", expected " + caseIds.get(i) + " (dataset order)");
      }
      String expected = verdictOf.get(id);
      String verdict = row.path("verdict").asText(null);
      if (expected == null) {
        v.add(p + "results line " + (i + 1) + ": " + id + " is not a case of the run");
      } else if (!expected.equals(verdict)) {
        v.add(p + "results line " + (i + 1) + ": " + id + " has verdict " + verdict + ", the store says " + expected);
      }
    }
  }
}
