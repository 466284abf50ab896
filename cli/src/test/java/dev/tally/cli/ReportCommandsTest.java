package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvParser;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.report.CsvReport;
import dev.tally.core.security.Secret;
import dev.tally.http.ApiServer;
import dev.tally.http.TallyServer;
import dev.tally.worker.LocalWorker;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Element;
import picocli.CommandLine;

/**
 * The reports and {@code tally compare} end to end in this JVM: {@code tally run --csv --junit --html}
 * on a run with pass, fail and error cases, then a second run of the same cases that changed some
 * verdicts, compared from the store; and the same from a server: {@code tally results --csv --junit
 * --html} and {@code tally compare --server}.
 */
class ReportCommandsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TOKEN = "report-test-token-9a2c";

  @TempDir Path dir;

  private record Invocation(int exit, String out, String err) {}

  private Invocation tally(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine().setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true));
    return new Invocation(cl.execute(args), out.toString(), err.toString());
  }

  /** Cases named by the verdict their script gives: one per verdict per run, some changed in the second. */
  private Path dataset(String name, String... idAndVerdict) throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < idAndVerdict.length; i += 2) {
      String script = switch (idAndVerdict[i + 1]) {
        case "pass" -> "echo fine";
        case "fail" -> "echo wrong; exit 3";
        default -> "echo '{\\\"verdict\\\": \\\"error\\\"}'";
      };
      // a, b, c are about algebra, d and e about geometry (in metadata, where --group-by looks first)
      String subject = idAndVerdict[i].compareTo("c") <= 0 ? "algebra" : "geometry";
      lines.add("{\"id\":\"" + idAndVerdict[i] + "\",\"input\":\"question " + idAndVerdict[i] + "\",\"metadata\":{\"subject\":\""
          + subject + "\"},\"script\":\"" + script + "\"}");
    }
    return Files.write(dir.resolve(name), lines);
  }

  private static final String[] FIRST = {"a", "pass", "b", "pass", "c", "fail", "d", "fail", "e", "error"};
  private static final String[] SECOND = {"a", "pass", "b", "fail", "c", "pass", "d", "fail", "e", "fail"};

  @Test
  void runWritesEveryReportAndCompareReadsTwoRunsFromTheStore() throws Exception {
    Path db = dir.resolve("tally.db");
    Invocation first = tally("run", dataset("first.jsonl", FIRST).toString(), "--db=" + db, "--workers=0", "--in-process=2",
        "--evaluator=exec", "--cmd=sh -c {script}", "--no-progress", "--out=" + dir.resolve("r1.jsonl"),
        "--summary=" + dir.resolve("s1.json"), "--csv=" + dir.resolve("r1.csv"), "--junit=" + dir.resolve("junit.xml"),
        "--html=" + dir.resolve("report.html"), "--group-by=subject");
    assertThat(first.exit()).as(first.err()).isEqualTo(Main.EXIT_FAILED);
    assertThat(first.err()).contains("reports " + dir.resolve("r1.csv") + ", " + dir.resolve("junit.xml") + ", " + dir.resolve("report.html"));

    List<List<String>> rows = csvRows(dir.resolve("r1.csv"));
    assertThat(rows.get(0)).isEqualTo(CsvReport.COLUMNS);
    assertThat(rows.subList(1, rows.size())).extracting(r -> r.get(0) + "=" + r.get(1))
        .containsExactly("a=pass", "b=pass", "c=fail", "d=fail", "e=error");

    Element suite = (Element) DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(dir.resolve("junit.xml").toFile())
        .getElementsByTagName("testsuite").item(0);
    assertThat(suite.getAttribute("tests")).isEqualTo("5");
    assertThat(suite.getAttribute("failures")).isEqualTo("2");
    assertThat(suite.getAttribute("errors")).isEqualTo("1");
    assertThat(suite.getElementsByTagName("failure").getLength()).isEqualTo(2);
    assertThat(suite.getElementsByTagName("error").getLength()).isEqualTo(1);

    String html = Files.readString(dir.resolve("report.html"));
    assertThat(html).contains("40.0% (95% CI").contains("\"input\":\"question a\"")
        .contains("<h2>By subject</h2>").contains("<td>algebra</td><td class=\"num\">3</td><td>66.7% (95% CI");

    JsonNode groups = JSON.readTree(dir.resolve("s1.json").toFile()).get("groups");
    assertThat(groups.get("by").asText()).isEqualTo("subject");
    assertThat(groups.get("values")).extracting(g -> g.get("value").asText() + " " + g.get("n").asLong() + " "
        + g.get("accuracy").get("value").asDouble()).containsExactly("algebra 3 " + 2.0 / 3, "geometry 2 0.0");
    assertThat(first.out()).contains("by subject").containsPattern("algebra\\s+3  accuracy 66.7% \\(95% CI");

    Invocation second = tally("run", dataset("second.jsonl", SECOND).toString(), "--db=" + db, "--workers=0", "--in-process=2",
        "--evaluator=exec", "--cmd=sh -c {script}", "--no-progress", "--out=" + dir.resolve("r2.jsonl"), "--summary=" + dir.resolve("s2.json"));
    assertThat(second.exit()).as(second.err()).isEqualTo(Main.EXIT_FAILED);

    Invocation compared = tally("compare", "1", "2", "--db=" + db);
    assertThat(compared.exit()).as(compared.err()).isZero();
    assertThat(compared.out()).contains("run 1 (A) against run 2 (B): 5 cases in both")
        .contains("accuracy A   40.0% (95% CI").contains("accuracy B   40.0% (95% CI")
        .contains("B - A        +0.0 points").contains("McNemar p=1.0000: within the noise")
        .contains("changed      3 cases: 1 pass -> fail or error, 1 fail or error -> pass, 1 other")
        .contains("passed in A, not in B (1):\n  b  pass -> fail")
        .contains("passed in B, not in A (1):\n  c  fail -> pass")
        .contains("other changes (1):\n  e  error -> fail");

    Invocation unknown = tally("compare", "1", "9", "--db=" + db);
    assertThat(unknown.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(unknown.err()).contains("run 9 is not in " + db);

    // A run of another dataset: no case in common is no comparison (it printed figures of nothing, exit 0).
    Invocation other = tally("run", dataset("other.jsonl", "z", "pass").toString(), "--db=" + db,
        "--workers=0", "--in-process=1", "--evaluator=exec", "--cmd=sh -c {script}", "--no-progress",
        "--out=" + dir.resolve("r3.jsonl"), "--summary=" + dir.resolve("s3.json"));
    assertThat(other.exit()).as(other.err()).isZero();
    Invocation disjoint = tally("compare", "1", "3", "--db=" + db);
    assertThat(disjoint.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(disjoint.err()).contains("runs 1 and 3 have no case in common (5 cases in A, 1 in B): nothing to compare");
    assertThat(disjoint.out()).isEmpty();
  }

  @Test
  void resultsWritesTheReportsFromAServerAndCompareReadsItsRuns() throws Exception {
    Path tokenFile = Files.writeString(dir.resolve("api-token"), TOKEN + "\n");
    ApiServer.Settings api = ApiServer.Settings.builder().bind("127.0.0.1", 0).token(Secret.of(TOKEN, "API token"))
        .spoolDirectory(dir.resolve("uploads")).build();
    try (TallyServer server = TallyServer.start(Coordinator.builder().storeFile(dir.resolve("server.db")), api)) {
      LocalWorker worker = LocalWorker.start("in-process", 2, 2, server.coordinator().scheduler(), server.coordinator().store().storeId());
      try {
        String url = server.api().url();
        for (Path cases : List.of(dataset("first.jsonl", FIRST), dataset("second.jsonl", SECOND))) {
          Invocation submitted = tally("submit", cases.toString(), "--server", url, "--token-file", tokenFile.toString(), "--state-dir",
              dir.resolve("state").toString(), "--evaluator", "exec", "--cmd", "sh -c {script}", "--wait");
          assertThat(submitted.exit()).as(submitted.err()).isEqualTo(Main.EXIT_FAILED); // some cases failed
        }

        Invocation results = tally("results", "1", "--server", url, "--token-file", tokenFile.toString(),
            "--out", dir.resolve("r.jsonl").toString(), "--summary", dir.resolve("s.json").toString(),
            "--csv", dir.resolve("r.csv").toString(), "--junit", dir.resolve("junit.xml").toString(), "--html", dir.resolve("r.html").toString());
        assertThat(results.exit()).as(results.err()).isZero();
        assertThat(csvRows(dir.resolve("r.csv"))).hasSize(6);
        assertThat(Files.readString(dir.resolve("junit.xml"))).contains("<testsuite name=\"tally run 1\" tests=\"5\" failures=\"2\" errors=\"1\"");
        JsonNode summary = JSON.readTree(dir.resolve("s.json").toFile());
        assertThat(Files.readString(dir.resolve("r.html"))).contains(EstimateTextOf.percent(summary));

        Invocation compared = tally("compare", "1", "2", "--server", url, "--token-file", tokenFile.toString());
        assertThat(compared.exit()).as(compared.err()).isZero();
        assertThat(compared.out()).contains("5 cases in both").contains("changed      3 cases");

        Invocation unknown = tally("compare", "1", "9", "--server", url, "--token-file", tokenFile.toString());
        assertThat(unknown.exit()).isEqualTo(Main.EXIT_USAGE);
        assertThat(unknown.err()).contains("there is no run 9");
      } finally {
        worker.close("test over");
      }
    }
  }

  private static List<List<String>> csvRows(Path file) throws Exception {
    CsvMapper csv = new CsvMapper().enable(CsvParser.Feature.WRAP_AS_ARRAY);
    List<List<String>> rows = new ArrayList<>();
    try (MappingIterator<List<String>> it = csv.readerForListOf(String.class).readValues(file.toFile())) {
      it.forEachRemaining(rows::add);
    }
    return rows;
  }

  /** The summary's accuracy as the report states it. */
  private static final class EstimateTextOf {
    static String percent(JsonNode summary) throws Exception {
      return dev.tally.core.stats.EstimateText.percent(JSON.treeToValue(summary.get("accuracy"), dev.tally.core.stats.EstimateText.Written.class).estimate());
    }
  }
}
