package dev.tally.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.coordinator.report.AtomicFile;
import dev.tally.coordinator.report.HtmlReport;
import dev.tally.coordinator.report.ResultLines;
import dev.tally.cli.client.ApiClient;
import dev.tally.http.ApiServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tally results RUN --out F --summary S}: a finished run's results ({@code results.jsonl}) and
 * summary ({@code summary.json}) from a server, byte for byte as the server sends them (which is what
 * {@code tally run} writes), and the reports asked for ({@code --csv}, {@code --junit}, {@code --html}),
 * made from those two files (the HTML report has no inputs: the API does not serve them). Each file is written atomically: streamed into a temporary file beside it,
 * synced, then renamed over it, so a reader never sees half a file and an interrupted download leaves the
 * old file (if any) as it was.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "results",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Download a finished run's results and summary from a Tally server, as tally run writes them.",
      "Exit code: 0 written; 1 no answer from the server or a file could not be written; 2 bad usage, an unknown or"
          + " unfinished run (tally wait RUN first), or a refused token."
    })
public final class ResultsCommand extends ClientCommand {
  @Parameters(index = "0", paramLabel = "RUN", description = "The run's id.")
  String run;

  @Option(names = "--out", defaultValue = OutputFiles.DEFAULT_RESULTS, description = "Results file, one line per case in dataset order (default: ${DEFAULT-VALUE}).", paramLabel = "FILE")
  Path out;

  @Option(names = "--summary", defaultValue = OutputFiles.DEFAULT_SUMMARY, description = "Summary file (default: ${DEFAULT-VALUE}).", paramLabel = "FILE")
  Path summary;

  @Mixin ReportOptions reports;

  @Option(names = "--group-by", paramLabel = "FIELD", description = "Also state accuracy and mean score per value of this field of the cases (metadata.FIELD, else FIELD), in the summary and the table.")
  String groupBy;

  @Override
  int run(ApiClient client, PrintWriter stdout, PrintWriter err) throws Exception {
    long id = runId(run);
    RunnerCommand.requireDirectoryOf(spec.commandLine(), "--out", out);
    RunnerCommand.requireDirectoryOf(spec.commandLine(), "--summary", summary);
    reports.requireDirectories(spec.commandLine());
    reports.addTo(new OutputFiles().writes("--out", out).writes("--summary", summary)).requireDistinct(spec.commandLine());
    String runPath = ApiServer.BASE + "/runs/" + id;
    List<Path> written = new java.util.ArrayList<>();
    try {
      download(client, runPath + "/results", "results of run " + id, out);
      written.add(out);
      download(client, runPath + "/summary" + (groupBy == null ? ""
          : "?groupBy=" + java.net.URLEncoder.encode(groupBy, java.nio.charset.StandardCharsets.UTF_8)),
          "summary of run " + id, summary);
      written.add(summary);
      if (groupBy != null) {
        SummaryTable.printGroups(stdout, new ObjectMapper().readTree(summary.toFile()).get("groups"));
      }
      if (reports.any()) {
        // Made from the files just downloaded: the server's own bytes, so the reports say what tally run's would.
        JsonNode summaryJson = new ObjectMapper().readTree(summary.toFile());
        reports.write(summaryJson, ResultLines.of(out), HtmlReport.Inputs.NONE, written);
      }
    } catch (IOException e) {
      err.println("tally: " + e.getMessage() + OutputFiles.writtenBefore(written));
      return Main.EXIT_FAILED;
    }
    List<Path> reportsWritten = written.stream().filter(p -> !p.equals(out) && !p.equals(summary)).toList();
    err.printf("tally: run %d: results in %s, summary in %s%s%n", id, out, summary,
        reportsWritten.isEmpty() ? "" : "; reports " + reportsWritten.stream().map(Path::toString).collect(Collectors.joining(", ")));
    return Main.EXIT_PASSED;
  }

  /** Downloads into {@code target} whole or not at all ({@link AtomicFile}). */
  static void download(ApiClient client, String path, String what, Path target)
      throws IOException, ApiClient.Refused, ApiClient.Unreachable, InterruptedException {
    try {
      AtomicFile.write(target, temp -> {
        ApiClient.Request request = new ApiClient.Request("GET", path, java.util.Map.of(), null, false, temp);
        try {
          ApiClient.requireOk(client.send(request, "downloading the " + what, ""));
        } catch (ApiClient.Refused | ApiClient.Unreachable | InterruptedException e) {
          throw new Download(e);
        }
      });
    } catch (Download d) {
      Throwable e = d.getCause();
      if (e instanceof ApiClient.Refused r) {
        throw r;
      }
      if (e instanceof ApiClient.Unreachable u) {
        throw u;
      }
      throw (InterruptedException) e;
    } catch (IOException e) {
      throw new IOException("cannot write " + target + ": " + e.getMessage(), e);
    }
  }

  /** Carries the client's own failures out of the file writer, which may throw only IOException. */
  private static final class Download extends IOException {
    Download(Exception cause) {
      super(cause);
    }
  }

}
