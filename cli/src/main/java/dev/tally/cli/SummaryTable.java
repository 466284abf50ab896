package dev.tally.cli;

import dev.tally.core.stats.EstimateText;
import dev.tally.core.store.RunCounters;
import dev.tally.coordinator.report.RunReport;
import java.io.PrintWriter;

/**
 * The summary table for people, printed at the end of {@code tally run}. The results and summary files
 * themselves are written by their one owner, {@link RunReport}, which the
 * HTTP API serves as well.
 *
 * <p>Thread-safety: stateless.
 */
final class SummaryTable {
  private SummaryTable() {}

  /** Prints the summary table for people. */
  static void print(PrintWriter out, long runId, RunCounters c, RunReport.Times times) {
    // Both spans: a resumed run's coordinator saw only its last part.
    out.printf("%nrun %d finished in %.1f s on this coordinator, %.1f s since it was created%n", runId,
        times.wallMillis() / 1000.0, times.runWallMillis() / 1000.0);
    for (RunReport.CountRow r : RunReport.countRows(c)) { // the rows' one owner: the dashboard shows the same
      row(out, r.label(), r.count());
    }
    text(out, "accuracy", EstimateText.percent(c.accuracy().orElse(null)));
    c.meanScore().ifPresent(m -> text(out, "mean score", EstimateText.mean(m)));
    out.flush();
  }

  /** Prints what the run's paid calls used ({@link RunReport#usage}'s object): tokens, and cost with a price. */
  static void printUsage(PrintWriter out, com.fasterxml.jackson.databind.JsonNode usage) {
    text(out, "tokens", usage.path("promptTokens").asLong() + " prompt + " + usage.path("completionTokens").asLong()
        + " completion");
    if (usage.hasNonNull("costUsd")) {
      text(out, "cost", String.format(java.util.Locale.ROOT, "$%.4f", usage.get("costUsd").asDouble()));
    }
    out.flush();
  }

  /**
   * Prints the figures by group ({@link dev.tally.coordinator.report.ReportGroups}'s {@code groups} object):
   * one line per group with its cases, accuracy and mean score.
   */
  static void printGroups(PrintWriter out, com.fasterxml.jackson.databind.JsonNode groups) {
    out.printf("%nby %s%s%n", TerminalText.safe(groups.path("by").asText(), ID_CHARS), groups.path("truncated").asBoolean()
        ? " (more groups than " + dev.tally.core.stats.GroupedEstimates.MAX_GROUPS + ": the rest counted as "
            + dev.tally.core.stats.GroupedEstimates.OTHER + ")" : "");
    for (com.fasterxml.jackson.databind.JsonNode g : groups.path("values")) {
      out.printf("  %-26s %6d  accuracy %s%s%n", TerminalText.safe(g.path("value").asText(), ID_CHARS), g.path("n").asLong(),
          EstimateText.Written.textOf(g.get("accuracy")),
          g.path("meanScore").isObject() ? ", mean score " + EstimateText.Written.textOf(g.get("meanScore")) : "");
    }
    com.fasterxml.jackson.databind.JsonNode values = groups.path("values");
    if (values.size() == 1 && dev.tally.core.stats.GroupedEstimates.MISSING.equals(values.get(0).path("value").asText())) {
      // a misspelt field groups every case under (missing): say so, rather than let it pass for a figure
      String by = TerminalText.safe(groups.path("by").asText(), ID_CHARS);
      out.printf("  (no case has %s, as metadata.%s or from the case's top: check the field's name)%n", by, by);
    }
    out.flush();
  }

  /**
   * Prints pass@k ({@link dev.tally.coordinator.report.ReportPassAtK}'s {@code passAtK} object): one line per
   * k with its estimate and the samples it is over.
   */
  static void printPassAtK(PrintWriter out, com.fasterxml.jackson.databind.JsonNode passAtK) {
    out.printf("%npass@k over %d samples of up to %d epochs (Chen et al. 2021, unbiased)%n",
        passAtK.path("samples").asLong(), passAtK.path("epochs").asLong());
    for (com.fasterxml.jackson.databind.JsonNode v : passAtK.path("values")) {
      out.printf("  %-26s %s%n", "pass@" + v.path("k").asInt(), EstimateText.Written.textOf(v.get("estimate")));
    }
    out.flush();
  }

  /** How many of the cases that did not pass the summary names; the results file has every one. */
  static final int NOT_PASSED_SHOWN = 10;
  /** The longest reason printed beside such a case, in characters. */
  static final int REASON_CHARS = 100;

  /**
   * A case that did not pass, as the summary names it.
   *
   * @param position its 0-based place in the dataset (the order they are named in)
   * @param why its verdict and why, on one line ({@link #why})
   */
  record NotPassed(int position, String caseId, String why) {
    static NotPassed of(dev.tally.core.store.JobView j) {
      dev.tally.core.Outcome o = j.outcome();
      return new NotPassed(j.position(), j.caseId(), o == null ? SummaryTable.why(null, null, null, null, j.failureReason())
          : SummaryTable.why(o.verdict().wireName(), o.exitCode(), o.stderrTail(), o.outputTail(), null));
    }

    static NotPassed of(dev.tally.http.dto.CaseObject c) {
      return new NotPassed(c.position(), c.id(), SummaryTable.why(c.verdict(), c.exitCode(), c.stderr(), c.output(), c.failureReason()));
    }
  }

  /**
   * The pages of a run's cases that hold those that did not pass: failed, and errored (which takes in the
   * cases out of attempts: {@link dev.tally.core.store.JobView#reportedVerdict}). One list for both readers:
   * {@link #notPassed} asks a store, {@code tally wait} the API ({@link #apiQuery}).
   */
  enum NotPassedPage {
    FAILED(dev.tally.core.Verdict.FAIL, null),
    ERRORED(dev.tally.core.Verdict.ERROR, null);

    private final dev.tally.core.Verdict verdict;
    private final dev.tally.core.store.JobState state;

    NotPassedPage(dev.tally.core.Verdict verdict, dev.tally.core.store.JobState state) {
      this.verdict = verdict;
      this.state = state;
    }

    /** The first {@value #NOT_PASSED_SHOWN} of this page, as a store takes the query. */
    dev.tally.core.store.CaseQuery query() {
      return new dev.tally.core.store.CaseQuery(verdict, state, -1, NOT_PASSED_SHOWN);
    }

    /** The same, as {@code GET /runs/{id}/cases} takes it: {@code verdict=fail&limit=10}. */
    String apiQuery() {
      return (verdict != null ? "verdict=" + verdict.wireName() : "state=" + state.name().toLowerCase(java.util.Locale.ROOT))
          + "&limit=" + NOT_PASSED_SHOWN;
    }
  }

  /** The cases of run {@code runId} that did not pass, the first {@value #NOT_PASSED_SHOWN} in dataset order. */
  static java.util.List<NotPassed> notPassed(dev.tally.core.store.Store store, long runId) {
    java.util.List<NotPassed> found = new java.util.ArrayList<>();
    for (NotPassedPage page : NotPassedPage.values()) {
      store.cases(runId, page.query()).forEach(v -> found.add(NotPassed.of(v.job())));
    }
    return firstInOrder(found);
  }

  /** The first {@value #NOT_PASSED_SHOWN} of {@code cases} in dataset order. */
  static java.util.List<NotPassed> firstInOrder(java.util.List<NotPassed> cases) {
    return cases.stream().sorted(java.util.Comparator.comparingInt(NotPassed::position)).limit(NOT_PASSED_SHOWN).toList();
  }

  /**
   * Names the cases of an ended run that did not pass ({@code shown}: {@link #notPassed}), each with its
   * verdict and why, under a line that counts them among the cases that ended (and says how many were
   * cancelled or not run); nothing if every case that ended passed.
   *
   * @param where where every case's result is (a results file, a command that prints them)
   */
  static void printNotPassed(PrintWriter out, RunCounters c, java.util.List<NotPassed> shown, String where) {
    long notPassed = c.failed() + RunReport.errored(c);
    if (notPassed == 0 || shown.isEmpty()) {
      return;
    }
    long ended = c.judged();
    long notEnded = c.total() - ended - c.cancelled();
    out.printf("%nnot passed: %d of %d ended%s%s (%s; every case in %s)%n", notPassed, ended,
        c.cancelled() > 0 ? ", " + c.cancelled() + " cancelled" : "", notEnded > 0 ? ", " + notEnded + " not run" : "",
        notPassed > shown.size() ? "the first " + shown.size() + " below" : "below", where);
    java.util.List<String> ids = shown.stream().map(n -> TerminalText.safe(n.caseId(), ID_CHARS)).toList();
    int width = ids.stream().mapToInt(id -> id.codePointCount(0, id.length())).max().orElse(0);
    for (int i = 0; i < shown.size(); i++) {
      String id = ids.get(i);
      out.println("  " + id + " ".repeat(width - id.codePointCount(0, id.length())) + "  " + shown.get(i).why());
    }
    out.flush();
  }

  /** The longest case id printed in the list, in characters; a longer one is cut. */
  static final int ID_CHARS = 60;

  /**
   * A case's verdict and reason on one line: {@code fail, exit 1: AssertionError ...}: the verdict, the exit
   * code, and the last line of its error output (else of its output: an evaluator's message is there); or,
   * for a case with no verdict ({@code verdict} null), why it ran out of attempts. Null texts count as empty.
   */
  static String why(String verdict, Integer exitCode, String stderr, String output, String failureReason) {
    // Out of attempts: no recorded verdict from a store, the reported "error" and a failure reason from the API.
    if (verdict == null || failureReason != null) {
      return "out of attempts" + (failureReason == null ? "" : ": " + lastLine(failureReason));
    }
    String said = lastLine(stderr);
    if (said.isEmpty()) {
      said = lastLine(output);
    }
    return verdict + (exitCode == null ? "" : ", exit " + exitCode) + (said.isEmpty() ? "" : ": " + said);
  }

  /** The last line of {@code text} (null: empty), as {@link TerminalText#safe} shows it within {@link #REASON_CHARS}. */
  static String lastLine(String text) {
    if (text == null) {
      return "";
    }
    String[] lines = text.strip().split("\\R");
    return TerminalText.safe(lines[lines.length - 1].strip(), REASON_CHARS);
  }

  private static void text(PrintWriter out, String name, String value) {
    out.printf("  %-26s %s%n", name, value);
  }

  private static void row(PrintWriter out, String name, long value) {
    out.printf("  %-26s %10d%n", name, value);
  }
}
