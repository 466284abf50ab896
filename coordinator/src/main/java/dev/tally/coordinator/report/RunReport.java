package dev.tally.coordinator.report;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.Outcome;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.CaseQuery;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The one writer of what a finished run produced: its results (one JSON line per case, in dataset order:
 * {@code results.jsonl}) and its summary ({@code summary.json}). {@code tally run} writes them to files
 * ({@link #writeResultsFile}, {@link #writeSummaryFile}) and the HTTP API streams the same bytes
 * ({@link #writeResults}, {@link #summaryBytes}), so a client that downloads a run's results gets exactly
 * the file {@code tally run} would have written.
 *
 * <p><b>Results line</b>: {@code id}, {@code verdict}, {@code score}, {@code attempts}, {@code worker},
 * {@code durationMillis}, {@code output} (stdout's tail), {@code stderr} (stderr's tail), {@code exitCode},
 * {@code answer} and {@code fields} (what the evaluator gave beside its verdict; null when nothing); a job that ended failed (out of attempts, or never recorded) has
 * verdict {@code error}, its {@code failure} reason, and (as has any job tried more than once) its attempt
 * {@code history}: {@code token}, {@code worker}, {@code ending}, {@code detail}, {@code millis}. A case that
 * has not ended (a paused or running run's) has no line.
 *
 * <p><b>Summary</b>: {@code runId}, {@code total}, {@code passed}, {@code failed}, {@code errored}
 * ({@link #errored}), {@code recorded}, {@code jobsFailed}, {@code cancelled}, {@code duplicatesSuppressed}, {@code
 * staleResultsFenced}, {@code redeliveries}, {@code backups} (backup attempts started), {@code accuracy} and {@code meanScore} (each a {@link
 * dev.tally.core.stats.EstimateText.Written}: {@code value}, {@code n}, {@code standardError}, {@code low}, {@code
 * high}, {@code confidence}, {@code method} and {@code text}, the estimate in words; null when there is nothing
 * to estimate from), {@code wallMillis},
 * {@code runWallMillis} ({@link Times}), with {@code --epochs} pass@k ({@code passAtK}, {@link ReportPassAtK}),
 * and with {@code --group-by} the figures by group ({@code groups},
 * {@link ReportGroups}), pretty-printed, with a final newline.
 *
 * <p>Files are written to a temporary sibling and moved into place, so a reader never sees half a file.
 *
 * <p>Thread-safety: stateless; safe from any thread (the store's reads are).
 */
public final class RunReport {
  private static final ObjectMapper JSON = new ObjectMapper()
      // The caller owns the stream: a results download goes on to close the response itself.
      .disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);

  /** The media type of the results: one JSON object per line. */
  public static final String RESULTS_MEDIA_TYPE = "application/x-ndjson";

  private RunReport() {}

  /**
   * How long a run took.
   *
   * @param wallMillis this coordinator's part: from its start on the run to the run's end (all of it for
   *     a run that was never interrupted)
   * @param runWallMillis the run's whole span: from its creation in the store to its end, across every
   *     coordinator that worked on it (wall clock, so a clock stepped meanwhile shows here)
   */
  public record Times(long wallMillis, long runWallMillis) {}

  /** A finished run's whole span in the store: creation to the end of its last job (0 if not finished). */
  public static long runWallMillis(RunView run) {
    return run.ended() ? Math.max(0, run.finishedAtMillis() - run.createdAtMillis()) : 0;
  }

  /**
   * Cases that ended {@code error}, as results.jsonl, summary.json, the API, {@code tally run}'s table and
   * {@code tally status} count them: an {@code error} verdict, or out of attempts ({@code jobsFailed}).
   */
  public static long errored(RunCounters c) {
    return c.errored() + c.jobsFailed();
  }

  /**
   * One row of the summary table for people: a label and a count of cases or events.
   *
   * @param label the words, as the table writes them ({@code duplicates suppressed})
   * @param count the figure
   */
  public record CountRow(String label, long count) {}

  /**
   * The counts of the summary table for people, in its order and words: {@code tally run}'s table prints
   * them, and the summary ({@link #summaryBytes}, so the API and the dashboard's summary too) carries them as
   * {@code rows}, so that every table of a run lists the same rows. A row that is zero for most runs is
   * left out then: out of attempts (under errored), cancelled, backup attempts.
   *
   * @param c the run's counters
   * @return the rows, total first
   */
  public static List<CountRow> countRows(RunCounters c) {
    List<CountRow> rows = new java.util.ArrayList<>();
    rows.add(new CountRow("total", c.total()));
    rows.add(new CountRow("passed", c.passed()));
    rows.add(new CountRow("failed", c.failed()));
    rows.add(new CountRow("errored", errored(c)));
    if (c.jobsFailed() > 0) {
      rows.add(new CountRow("  of which out of attempts", c.jobsFailed()));
    }
    if (c.cancelled() > 0) { // a cancelled run's table adds up to its total
      rows.add(new CountRow("cancelled", c.cancelled()));
    }
    rows.add(new CountRow("recorded", c.recorded()));
    rows.add(new CountRow("redeliveries", c.redeliveries()));
    if (c.backups() > 0) { // speculation: a copy of a straggler; the first to report is recorded, once
      rows.add(new CountRow("backup attempts", c.backups()));
    }
    rows.add(new CountRow("duplicates suppressed", c.duplicatesSuppressed()));
    rows.add(new CountRow("stale results fenced", c.staleResultsFenced()));
    return List.copyOf(rows);
  }

  /**
   * Writes the run's results lines to {@code out}, one job at a time, each line ending in {@code \n}.
   * Does not close {@code out}.
   *
   * @throws IOException if {@code out} fails
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public static void writeResults(Store store, long runId, OutputStream out) throws IOException {
    OutputStream buffered = new BufferedOutputStream(out, 64 * 1024);
    forEachResult(store, runId, line -> {
      JSON.writeValue(buffered, line);
      buffered.write('\n');
    });
    buffered.flush();
  }

  /**
   * Gives the run's results lines (as {@link #writeResults} writes them) to {@code each}, one ended job
   * at a time in dataset order (a case not ended yet has none): what the other reports ({@link ResultLines#of(Store, long)}) are made from.
   *
   * @throws IOException if {@code each} throws it
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public static void forEachResult(Store store, long runId, ResultLines.Each each) throws IOException {
    // A page of jobs at a time, and the attempts of only the jobs whose line shows them: a run of a million
    // cases is written in the memory of one page, not of its jobs and attempts.
    int after = -1;
    while (true) {
      List<CaseView> page = store.cases(runId, new CaseQuery(null, null, after, RESULTS_PAGE));
      for (CaseView c : page) {
        JobView job = c.job();
        if (job.state() == JobState.PENDING || job.state() == JobState.LEASED) {
          continue; // not ended (a paused run's cases not run yet, or a running run's): no result to give
        }
        // Each lease raises the token by one: a job leased once has at most one ended attempt, no history to show.
        List<AttemptView> attempts = job.state() != JobState.DONE || job.token() > 1
            ? store.attempts(runId, job.caseId()).orElse(List.of()) : List.of();
        each.accept(resultLine(job, attempts));
      }
      if (page.size() < RESULTS_PAGE) {
        return;
      }
      after = page.get(page.size() - 1).job().position();
    }
  }

  /** Jobs read per snapshot for the results: the most a page may hold ({@link RunPage#MAX_LIMIT}). */
  static final int RESULTS_PAGE = RunPage.MAX_LIMIT;

  /**
   * Writes the results file {@code out} ({@link #writeResults}), atomically.
   *
   * @throws IOException if the file cannot be written
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public static void writeResultsFile(Store store, long runId, Path out) throws IOException {
    AtomicFile.write(out, tmp -> {
      try (OutputStream w = Files.newOutputStream(tmp)) {
        writeResults(store, runId, w);
      }
    });
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
      line.put("stderr", outcome.stderrTail());
      if (outcome.exitCode() == null) {
        line.putNull("exitCode");
      } else {
        line.put("exitCode", outcome.exitCode());
      }
      line.put("answer", outcome.answer());
      line.set("fields", fields(outcome));
    } else {
      // A cancelled case was not judged: it is neither an error of the case nor counted as one.
      line.put("verdict", job.reportedVerdict());
      line.putNull("score");
      line.put("attempts", job.attempts());
      line.putNull("worker");
      line.putNull("durationMillis");
      line.put("output", "");
      line.put("stderr", "");
      line.putNull("exitCode");
      line.putNull("answer");
      line.putNull("fields");
      line.put("failure", job.state() == JobState.CANCELLED ? "the run was cancelled before this case ended"
          : job.failureReason() == null
              ? "job did not finish (state " + job.state().name().toLowerCase(java.util.Locale.ROOT) + ")" : job.failureReason());
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
   * An outcome's structured fields as JSON: the object its evaluator gave, or, if its text is not JSON
   * after all (a store edited by hand), that text as a string, so a report never fails on one case;
   * {@code null} when it has none.
   */
  public static com.fasterxml.jackson.databind.JsonNode fields(Outcome outcome) {
    if (outcome.fieldsJson() == null) {
      return null;
    }
    try {
      return JSON.readTree(outcome.fieldsJson());
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      return JSON.getNodeFactory().textNode(outcome.fieldsJson());
    }
  }

  /**
   * The summary's figures beyond the counters, from the run's cases as the store keeps them: {@code passAtK}
   * when its cases are epochs ({@link ReportPassAtK}), {@code groups} by {@code groupBy} when given ({@link
   * ReportGroups}), and {@code usage} for a run whose calls are paid ({@link #usage}). The one assembly, for
   * {@code tally run}'s summary and the API's; each case keeps only the fields these read, so a run of a
   * million cases costs a small map, not its dataset.
   *
   * @param groupBy the field to group by, or null for none
   * @throws IOException if the results lines cannot be read
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public static ObjectNode caseFigures(Store store, long runId, String groupBy) throws IOException {
    dev.tally.core.store.RunView run = store.run(runId).orElseThrow(
        () -> new IllegalArgumentException("there is no run " + runId));
    // Only the cases with something to keep are kept; without a group, only a case that names a sample
    // (an epoch) is read at all, so a run of plain cases costs a scan of text, not a parse per case.
    java.util.Map<String, JsonNode> kept = new HashMap<>();
    String sampleField = dev.tally.core.cases.Epochs.SAMPLE_ID_FIELD;
    store.forEachCase(runId, (id, json) -> {
      if (groupBy == null && !json.contains("\"" + sampleField + "\"")) {
        return true;
      }
      ObjectNode small = JSON.createObjectNode();
      try {
        JsonNode c = JSON.readTree(json);
        JsonNode sample = c.get(sampleField);
        if (sample != null) {
          small.set(sampleField, sample);
        }
        if (groupBy != null) {
          small.put(groupBy, dev.tally.core.stats.GroupedEstimates.groupOf(c, groupBy));
        }
      } catch (IOException e) {
        // a case the store kept is JSON; one that is not has no fields to read: its group is the missing one
      }
      if (!small.isEmpty()) {
        kept.put(id, small);
      }
      return true;
    });
    boolean epochs = kept.values().stream().anyMatch(c -> c.has(sampleField));
    ObjectNode figures = JSON.createObjectNode();
    ResultLines lines = ResultLines.of(store, runId);
    if (epochs) {
      ReportPassAtK.of(lines, kept::get).ifPresent(p -> figures.set("passAtK", p));
    }
    if (groupBy != null) {
      figures.set("groups", ReportGroups.of(lines, kept::get, groupBy));
    }
    run.usage().ifPresent(u -> figures.set("usage", usage(u)));
    return figures;
  }

  /**
   * What a run's paid calls used, as the summary's {@code usage} object: {@code promptTokens}, {@code
   * completionTokens} (the run's journalled responses, each counted once) and, with a price, {@code
   * costUsd}.
   */
  public static ObjectNode usage(dev.tally.core.store.RunUsage usage) {
    ObjectNode u = JSON.createObjectNode();
    u.put("promptTokens", usage.promptTokens());
    u.put("completionTokens", usage.completionTokens());
    if (usage.costUsd() != null) {
      u.put("costUsd", usage.costUsd());
    }
    return u;
  }

  /** The summary's bytes: pretty-printed JSON and a final newline, in UTF-8. */
  public static byte[] summaryBytes(long runId, RunCounters c, Times times) {
    return summaryBytes(runId, c, times, null);
  }

  /**
   * The summary's bytes with the figures computed from the run's cases appended last: each field of {@code
   * caseFigures}, such as {@code groups} ({@link ReportGroups}) and {@code passAtK} ({@link ReportPassAtK}).
   *
   * @param caseFigures an object of such fields, or null for none
   */
  public static byte[] summaryBytes(long runId, RunCounters c, Times times, ObjectNode caseFigures) {
    ObjectNode s = JSON.createObjectNode();
    s.put("runId", runId);
    s.put("total", c.total());
    s.put("passed", c.passed());
    s.put("failed", c.failed());
    s.put("errored", errored(c));
    s.put("recorded", c.recorded());
    s.put("jobsFailed", c.jobsFailed());
    s.put("cancelled", c.cancelled());
    s.put("duplicatesSuppressed", c.duplicatesSuppressed());
    s.put("staleResultsFenced", c.staleResultsFenced());
    s.put("redeliveries", c.redeliveries());
    s.put("backups", c.backups());
    s.set("accuracy", JSON.valueToTree(dev.tally.core.stats.EstimateText.Written.percent(c.accuracy().orElse(null))));
    s.set("meanScore", JSON.valueToTree(dev.tally.core.stats.EstimateText.Written.mean(c.meanScore().orElse(null))));
    s.put("wallMillis", times.wallMillis());
    s.put("runWallMillis", times.runWallMillis());
    ArrayNode rows = s.putArray("rows");
    for (CountRow row : countRows(c)) {
      rows.addObject().put("label", row.label()).put("count", row.count());
    }
    if (caseFigures != null) {
      s.setAll(caseFigures);
    }
    try {
      return (JSON.writerWithDefaultPrettyPrinter().writeValueAsString(s) + "\n").getBytes(StandardCharsets.UTF_8);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("a tree of numbers cannot fail to serialize", e);
    }
  }

  /**
   * Writes the summary file {@code out} ({@link #summaryBytes}), atomically.
   *
   * @throws IOException if the file cannot be written
   */
  public static void writeSummaryFile(long runId, RunCounters c, Times times, Path out) throws IOException {
    writeSummaryFile(runId, c, times, null, out);
  }

  /**
   * Writes the summary file {@code out} with the figures computed from the cases ({@link #summaryBytes(long,
   * RunCounters, Times, ObjectNode)}), atomically.
   *
   * @throws IOException if the file cannot be written
   */
  public static void writeSummaryFile(long runId, RunCounters c, Times times, ObjectNode caseFigures, Path out)
      throws IOException {
    AtomicFile.write(out, summaryBytes(runId, c, times, caseFigures));
  }
}
