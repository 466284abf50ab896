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
    row(out, "total", c.total());
    row(out, "passed", c.passed());
    row(out, "failed", c.failed());
    row(out, "errored", RunReport.errored(c));
    if (c.jobsFailed() > 0) {
      row(out, "  of which out of attempts", c.jobsFailed());
    }
    row(out, "recorded", c.recorded());
    row(out, "redeliveries", c.redeliveries());
    if (c.backups() > 0) { // speculation: a copy of a straggler; the first to report is recorded, once
      row(out, "backup attempts", c.backups());
    }
    row(out, "duplicates suppressed", c.duplicatesSuppressed());
    row(out, "stale results fenced", c.staleResultsFenced());
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
    out.printf("%nby %s%s%n", groups.path("by").asText(), groups.path("truncated").asBoolean()
        ? " (more groups than " + dev.tally.core.stats.GroupedEstimates.MAX_GROUPS + ": the rest counted as "
            + dev.tally.core.stats.GroupedEstimates.OTHER + ")" : "");
    for (com.fasterxml.jackson.databind.JsonNode g : groups.path("values")) {
      out.printf("  %-26s %6d  accuracy %s%s%n", g.path("value").asText(), g.path("n").asLong(),
          EstimateText.percent(estimate(g.get("accuracy"))),
          g.path("meanScore").isObject() ? ", mean score " + EstimateText.mean(estimate(g.get("meanScore"))) : "");
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
      out.printf("  %-26s %s%n", "pass@" + v.path("k").asInt(), EstimateText.mean(estimate(v.get("estimate"))));
    }
    out.flush();
  }

  private static dev.tally.core.stats.Estimate estimate(com.fasterxml.jackson.databind.JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    try {
      return GROUP_JSON.treeToValue(node, dev.tally.core.stats.Estimate.class);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("an estimate this process wrote reads back", e);
    }
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper GROUP_JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  private static void text(PrintWriter out, String name, String value) {
    out.printf("  %-26s %s%n", name, value);
  }

  private static void row(PrintWriter out, String name, long value) {
    out.printf("  %-26s %10d%n", name, value);
  }
}
