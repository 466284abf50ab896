package dev.tally.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.coordinator.report.CsvReport;
import dev.tally.coordinator.report.HtmlReport;
import dev.tally.coordinator.report.JunitReport;
import dev.tally.coordinator.report.ResultLines;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The reports beside the results and summary files, for {@code tally run}, {@code tally resume} and {@code
 * tally results}: {@code --csv}, {@code --junit}, {@code --html}. Each is written from the run's results
 * lines by its writer in the coordinator's {@code report} package, atomically.
 *
 * <p>Thread-safety: filled by picocli, then used by the command's thread.
 */
public final class ReportOptions {
  @Option(names = "--csv", paramLabel = "FILE", description = "Also write the results as CSV: one row per case (id, verdict, score, attempts, worker, durationMillis, answer, exitCode, output, stderr, fields, failure).")
  Path csv;

  @Option(names = "--junit", paramLabel = "FILE", description = "Also write JUnit XML for CI systems: a testcase per case, failures and errors as such, cancelled cases skipped.")
  Path junit;

  @Option(names = "--html", paramLabel = "FILE", description = "Also write one self-contained HTML report (opens offline): the summary with its intervals, and every case, a page at a time.")
  Path html;

  /** Whether the HTML report is asked for: the one that shows each case's input beside its result. */
  boolean html() {
    return html != null;
  }

  /** The options as given, absolute, for a command that repeats them ({@code tally resume}'s hint). */
  java.util.List<String> arguments() {
    java.util.List<String> args = new java.util.ArrayList<>();
    if (csv != null) {
      args.add("--csv=" + csv.toAbsolutePath());
    }
    if (junit != null) {
      args.add("--junit=" + junit.toAbsolutePath());
    }
    if (html != null) {
      args.add("--html=" + html.toAbsolutePath());
    }
    return args;
  }

  /** Whether any report is asked for. */
  boolean any() {
    return csv != null || junit != null || html != null;
  }

  /**
   * Refuses a report file whose directory is missing, before anything runs ({@link
   * RunnerCommand#requireDirectoryOf(CommandLine, String, Path)}).
   *
   * @throws CommandLine.ParameterException naming the option
   */
  void requireDirectories(CommandLine commandLine) {
    if (csv != null) {
      RunnerCommand.requireDirectoryOf(commandLine, "--csv", csv);
    }
    if (junit != null) {
      RunnerCommand.requireDirectoryOf(commandLine, "--junit", junit);
    }
    if (html != null) {
      RunnerCommand.requireDirectoryOf(commandLine, "--html", html);
    }
  }

  /**
   * Adds the report files asked for to {@code files}, each under its option.
   *
   * @return {@code files}
   */
  OutputFiles addTo(OutputFiles files) {
    return files.writes("--csv", csv).writes("--junit", junit).writes("--html", html);
  }

  /**
   * Writes the reports asked for.
   *
   * @param summary the run's summary (summary.json's content)
   * @param lines the run's results lines
   * @param inputs each case's input for the HTML report, or {@link HtmlReport.Inputs#NONE}
   * @param written where each report is added once it is written
   * @throws IOException if a file cannot be written (its name is in the message) or the lines cannot be read
   */
  void write(JsonNode summary, ResultLines lines, HtmlReport.Inputs inputs, List<Path> written) throws IOException {
    if (csv != null) {
      CsvReport.write(lines, csv);
      written.add(csv);
    }
    if (junit != null) {
      JunitReport.write(summary, lines, junit);
      written.add(junit);
    }
    if (html != null) {
      HtmlReport.write(summary, lines, inputs, html);
      written.add(html);
    }
  }
}
