package dev.tally.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.Outcome;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes what a finished run produced: the results file (one JSON line per case, in dataset order), the
 * summary file, and the summary table for people.
 *
 * <p>Files are written to a temporary sibling and moved into place, so a reader never sees half a file.
 */
public final class RunReport {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RunReport() {}

  /**
   * How long a run took.
   *
   * @param wallMillis this coordinator's part: from its start on the run to the run's end (all of it for
   *     a run that was never interrupted)
   * @param runWallMillis the run's whole span: from its creation in the store to its end, across every
   *     coordinator that worked on it (wall clock, so a clock stepped meanwhile shows here)
   */
  record Times(long wallMillis, long runWallMillis) {}

  /** A finished run's whole span in the store: creation to the end of its last job (0 if not finished). */
  static long runWallMillis(RunView run) {
    return run.ended() ? Math.max(0, run.finishedAtMillis() - run.createdAtMillis()) : 0;
  }

  /**
   * Cases that ended {@code error}, as results.jsonl, summary.json, the table, the progress bar and
   * {@code tally status} count them: an {@code error} verdict, or out of attempts ({@code jobsFailed}).
   */
  static long errored(RunCounters c) {
    return c.errored() + c.jobsFailed();
  }

  /**
   * Writes {@code out}: one line per job with {@code id}, {@code verdict}, {@code score}, {@code attempts},
   * {@code worker}, {@code durationMillis}, {@code output}; a job that ended failed (out of attempts) has
   * verdict {@code error}, its {@code failure} reason and its attempt {@code history}.
   *
   * @throws IOException if the file cannot be written
   */
  static void writeResults(Store store, long runId, Path out) throws IOException {
    List<JobView> jobs = store.jobs(runId);
    Map<Long, List<AttemptView>> history = new HashMap<>();
    for (AttemptView a : store.attempts(runId)) {
      history.computeIfAbsent(a.jobId(), id -> new ArrayList<>()).add(a);
    }
    Path tmp = sibling(out);
    try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      for (JobView job : jobs) {
        w.write(JSON.writeValueAsString(resultLine(job, history.getOrDefault(job.jobId(), List.of()))));
        w.newLine();
      }
    }
    Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  private static ObjectNode resultLine(JobView job, List<AttemptView> attempts) {
    ObjectNode line = JSON.createObjectNode();
    line.put("id", job.caseId());
    Outcome outcome = job.outcome();
    if (job.state() == JobState.DONE && outcome != null) {
      line.put("verdict", outcome.verdict().wireName());
      if (outcome.score() == null) {
        line.putNull("score");
      } else {
        line.put("score", outcome.score());
      }
      line.put("attempts", job.attempts());
      line.put("worker", job.worker());
      line.put("durationMillis", outcome.durationMillis());
      line.put("output", outcome.outputTail());
    } else {
      line.put("verdict", "error");
      line.putNull("score");
      line.put("attempts", job.attempts());
      line.putNull("worker");
      line.putNull("durationMillis");
      line.put("output", "");
      line.put("failure", job.failureReason() == null ? "job did not finish (state " + job.state().name().toLowerCase() + ")" : job.failureReason());
    }
    if (job.state() != JobState.DONE || attempts.size() > 1) {
      ArrayNode h = line.putArray("history");
      for (AttemptView a : attempts) {
        ObjectNode entry = h.addObject();
        entry.put("token", a.token());
        entry.put("worker", a.worker());
        entry.put("ending", a.ending());
        entry.put("detail", a.detail());
        entry.put("millis", a.endedAtMillis() - a.startedAtMillis());
      }
    }
    return line;
  }

  /**
   * Writes {@code out} with the run's counters and times.
   *
   * @throws IOException if the file cannot be written
   */
  static void writeSummary(long runId, RunCounters c, Times times, Path out) throws IOException {
    ObjectNode s = JSON.createObjectNode();
    s.put("runId", runId);
    s.put("total", c.total());
    s.put("passed", c.passed());
    s.put("failed", c.failed());
    s.put("errored", errored(c));
    s.put("recorded", c.recorded());
    s.put("jobsFailed", c.jobsFailed());
    s.put("duplicatesSuppressed", c.duplicatesSuppressed());
    s.put("staleResultsFenced", c.staleResultsFenced());
    s.put("redeliveries", c.redeliveries());
    s.put("wallMillis", times.wallMillis());
    s.put("runWallMillis", times.runWallMillis());
    Path tmp = sibling(out);
    Files.writeString(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(s) + "\n", StandardCharsets.UTF_8);
    Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** Prints the summary table for people. */
  static void printTable(PrintWriter out, long runId, RunCounters c, Times times) {
    // Both spans: a resumed run's coordinator saw only its last part.
    out.printf("%nrun %d finished in %.1f s on this coordinator, %.1f s since it was created%n", runId,
        times.wallMillis() / 1000.0, times.runWallMillis() / 1000.0);
    row(out, "total", c.total());
    row(out, "passed", c.passed());
    row(out, "failed", c.failed());
    row(out, "errored", errored(c));
    if (c.jobsFailed() > 0) {
      row(out, "  of which out of attempts", c.jobsFailed());
    }
    row(out, "recorded", c.recorded());
    row(out, "redeliveries", c.redeliveries());
    row(out, "duplicates suppressed", c.duplicatesSuppressed());
    row(out, "stale results fenced", c.staleResultsFenced());
    out.flush();
  }

  private static void row(PrintWriter out, String name, long value) {
    out.printf("  %-26s %10d%n", name, value);
  }

  /** Where {@code out} is written before it is moved into place: its directory, which must exist. */
  private static Path sibling(Path out) {
    return out.toAbsolutePath().resolveSibling("." + out.getFileName() + ".tmp");
  }
}
