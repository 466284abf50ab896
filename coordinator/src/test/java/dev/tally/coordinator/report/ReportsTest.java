package dev.tally.coordinator.report;

import dev.tally.core.stats.Estimate;
import dev.tally.core.stats.EstimateText;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The CSV, JUnit and HTML reports and {@link RunComparison}, on results lines of every kind a run has: pass,
 * fail, an error verdict, out of attempts (error with a failure and history), and cancelled.
 */
class ReportsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Results lines as {@link RunReport} writes them, with text that needs quoting and escaping. */
  static final List<String> LINES = List.of(
      "{\"id\":\"a\",\"verdict\":\"pass\",\"score\":1.0,\"attempts\":1,\"worker\":\"w1\",\"durationMillis\":12,\"output\":\"42\"}",
      "{\"id\":\"b,1\",\"verdict\":\"fail\",\"score\":0.25,\"attempts\":1,\"worker\":\"w2\",\"durationMillis\":1500,"
          + "\"output\":\"said \\\"no\\\",\\nthen </script><b>bold</b> \\u001b[31mred\"}",
      "{\"id\":\"c\",\"verdict\":\"error\",\"score\":null,\"attempts\":1,\"worker\":\"w1\",\"durationMillis\":3,\"output\":\"boom\"}",
      "{\"id\":\"d\",\"verdict\":\"error\",\"score\":null,\"attempts\":3,\"worker\":null,\"durationMillis\":null,\"output\":\"\","
          + "\"failure\":\"out of attempts: worker died 3 times\",\"history\":[{\"token\":1,\"worker\":\"w1\",\"ending\":\"lost\","
          + "\"detail\":\"worker died\",\"millis\":5}]}",
      "{\"id\":\"e\",\"verdict\":\"cancelled\",\"score\":null,\"attempts\":0,\"worker\":null,\"durationMillis\":null,\"output\":\"\","
          + "\"failure\":\"the run was cancelled before this case ended\"}");

  static final String SUMMARY = "{\"runId\":7,\"total\":5,\"passed\":1,\"failed\":1,\"errored\":2,\"recorded\":3,\"jobsFailed\":1,"
      + "\"cancelled\":1,\"duplicatesSuppressed\":0,\"staleResultsFenced\":0,\"redeliveries\":2,"
      + "\"accuracy\":" + written(EstimateText.Written.percent(new Estimate(0.25, 4, 0.2165, 0.0456, 0.6994, 0.95, "wilson"))) + ","
      + "\"meanScore\":" + written(EstimateText.Written.mean(new Estimate(0.625, 2, 0.375, -4.14, 5.39, 0.95, "student-t"))) + ","
      + "\"rows\":[{\"label\":\"total\",\"count\":5},{\"label\":\"passed\",\"count\":1},{\"label\":\"failed\",\"count\":1},"
      + "{\"label\":\"errored\",\"count\":2},{\"label\":\"  of which out of attempts\",\"count\":1},{\"label\":\"cancelled\",\"count\":1},"
      + "{\"label\":\"recorded\",\"count\":3},{\"label\":\"redeliveries\",\"count\":2},{\"label\":\"duplicates suppressed\",\"count\":0},"
      + "{\"label\":\"stale results fenced\",\"count\":0}],"
      + "\"wallMillis\":2000,\"runWallMillis\":2500}";

  /** An estimate as the summary writes it (RunReport). */
  private static String written(EstimateText.Written e) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(e);
    } catch (com.fasterxml.jackson.core.JsonProcessingException x) {
      throw new IllegalStateException(x);
    }
  }

  @TempDir Path dir;

  private ResultLines lines() throws Exception {
    Path results = dir.resolve("results.jsonl");
    Files.write(results, LINES);
    return ResultLines.of(results);
  }

  /** The summary carries the table's rows, so the command line, the dashboard and the HTML report list the same. */
  @Test
  void theSummaryCarriesTheTablesRowsWithTheRareOnesOnlyWhenTheyHappened() throws Exception {
    dev.tally.core.store.RunCounters plain = dev.tally.core.store.RunCounters.builder(4).passed(3).failed(1).build();
    assertThat(RunReport.countRows(plain)).extracting(RunReport.CountRow::label).containsExactly("total", "passed", "failed",
        "errored", "recorded", "redeliveries", "duplicates suppressed", "stale results fenced");
    dev.tally.core.store.RunCounters rare = dev.tally.core.store.RunCounters.builder(6).passed(2).jobsFailed(1).cancelled(1)
        .backups(2).duplicatesSuppressed(1).build();
    assertThat(RunReport.countRows(rare)).extracting(RunReport.CountRow::label).containsExactly("total", "passed", "failed",
        "errored", "  of which out of attempts", "cancelled", "recorded", "redeliveries", "backup attempts",
        "duplicates suppressed", "stale results fenced");
    JsonNode summary = JSON.readTree(RunReport.summaryBytes(3, rare, new RunReport.Times(1, 1)));
    List<String> written = new ArrayList<>();
    summary.get("rows").forEach(r -> written.add(r.get("label").asText() + "=" + r.get("count").asLong()));
    assertThat(written).contains("errored=1", "  of which out of attempts=1", "backup attempts=2", "duplicates suppressed=1");
  }

  @Test
  void csvHasOneRowPerCaseAndParsesBackToTheResults() throws Exception {
    Path csv = dir.resolve("results.csv");
    CsvReport.write(lines(), csv);

    CsvMapper mapper = new CsvMapper().enable(CsvParser.Feature.WRAP_AS_ARRAY);
    List<List<String>> rows = new ArrayList<>();
    try (MappingIterator<List<String>> it = mapper.readerForListOf(String.class).readValues(csv.toFile())) {
      it.forEachRemaining(rows::add);
    }
    assertThat(rows.get(0)).isEqualTo(CsvReport.COLUMNS);
    assertThat(rows).hasSize(1 + LINES.size());
    for (int i = 0; i < LINES.size(); i++) {
      JsonNode line = JSON.readTree(LINES.get(i));
      for (int col = 0; col < CsvReport.COLUMNS.size(); col++) {
        JsonNode value = line.get(CsvReport.COLUMNS.get(col));
        String expected = value == null || value.isNull() ? "" : value.asText();
        assertThat(rows.get(i + 1).get(col)).as("row %d column %s", i + 1, CsvReport.COLUMNS.get(col)).isEqualTo(expected);
      }
    }
    String text = Files.readString(csv, StandardCharsets.UTF_8);
    assertThat(text).as("RFC 4180 ends rows in CRLF and quotes a field with a comma").contains("\r\n").contains("\"b,1\"");
  }

  @Test
  void junitHasATestcasePerCaseWithFailureErrorAndSkippedElements() throws Exception {
    Path xml = dir.resolve("junit.xml");
    JunitReport.write(JSON.readTree(SUMMARY), lines(), xml);

    Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml.toFile());
    Element root = doc.getDocumentElement();
    assertThat(root.getTagName()).isEqualTo("testsuites");
    NodeList suites = root.getElementsByTagName("testsuite");
    assertThat(suites.getLength()).isEqualTo(1);
    Element suite = (Element) suites.item(0);
    assertThat(suite.getAttribute("name")).isEqualTo("tally run 7");
    assertThat(Map.of("tests", suite.getAttribute("tests"), "failures", suite.getAttribute("failures"),
        "errors", suite.getAttribute("errors"), "skipped", suite.getAttribute("skipped"), "time", suite.getAttribute("time")))
        .isEqualTo(Map.of("tests", "5", "failures", "1", "errors", "2", "skipped", "1", "time", "2.500"));

    NodeList cases = suite.getElementsByTagName("testcase");
    assertThat(cases.getLength()).isEqualTo(5);
    // The suite's counts are those of its children: what a CI system checks.
    assertThat(suite.getElementsByTagName("failure").getLength()).isEqualTo(1);
    assertThat(suite.getElementsByTagName("error").getLength()).isEqualTo(2);
    assertThat(suite.getElementsByTagName("skipped").getLength()).isEqualTo(1);

    Element pass = (Element) cases.item(0);
    assertThat(pass.getAttribute("name")).isEqualTo("a");
    assertThat(pass.getAttribute("classname")).isEqualTo("tally.run.7");
    assertThat(pass.getAttribute("time")).isEqualTo("0.012");
    assertThat(pass.getElementsByTagName("failure").getLength() + pass.getElementsByTagName("error").getLength()).isZero();

    Element fail = (Element) cases.item(1);
    assertThat(((Element) fail.getElementsByTagName("failure").item(0)).getAttribute("message")).isEqualTo("verdict fail, score 0.25");
    assertThat(fail.getElementsByTagName("system-out").item(0).getTextContent())
        .as("the terminal escape XML cannot carry is replaced, the rest kept").isEqualTo("said \"no\",\nthen </script><b>bold</b> \uFFFD[31mred");

    Element outOfAttempts = (Element) cases.item(3);
    assertThat(((Element) outOfAttempts.getElementsByTagName("error").item(0)).getAttribute("message"))
        .isEqualTo("out of attempts: worker died 3 times");
    Element cancelled = (Element) cases.item(4);
    assertThat(cancelled.getElementsByTagName("skipped").getLength()).isEqualTo(1);
  }

  @Test
  void htmlIsOneFileWithTheFiguresAndEveryCaseAsEscapedData() throws Exception {
    Path html = dir.resolve("report.html");
    HtmlReport.write(JSON.readTree(SUMMARY), lines(), id -> id.equals("a") ? "What is 6 x 7? </script>" : null, html);

    String page = Files.readString(html);
    assertThat(page).contains("<title>Tally run 7</title>")
        .contains("25.0% (95% CI 4.6-69.9%, Wilson, n=4)")
        .contains("0.625 (SE 0.375, 95% CI -4.140 to 5.390, Student&#39;s t, n=2 scored)")
        .doesNotContain("<script src").doesNotContain("<link");
    // Only the page's own two script elements end: no case text closes one.
    assertThat(page.split("</script>", -1)).hasSize(3);
    String open = "<script id=\"case-data\" type=\"application/json\">";
    String data = page.substring(page.indexOf(open) + open.length(), page.indexOf("</script>"));
    JsonNode cases = JSON.readTree(data);
    assertThat(cases).hasSize(5);
    assertThat(cases.get(0).get("input").asText()).isEqualTo("What is 6 x 7? </script>");
    assertThat(cases.get(1).get("output").asText()).isEqualTo(JSON.readTree(LINES.get(1)).get("output").asText());
    assertThat(cases.get(3).get("history")).hasSize(1);
  }

  @Test
  void inputTextReadsStringsChatMessagesAndCasesWithoutInput() {
    assertThat(HtmlReport.inputText("{\"id\":\"1\",\"input\":\"2+2?\"}")).isEqualTo("2+2?");
    assertThat(HtmlReport.inputText("{\"id\":\"1\",\"input\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
        + "{\"role\":\"user\",\"content\":\"2+2?\"}]}")).isEqualTo("system: Be brief.\nuser: 2+2?");
    assertThat(HtmlReport.inputText("{\"id\":\"1\",\"question\":\"2+2?\",\"target\":\"4\"}")).isEqualTo("{\"question\":\"2+2?\",\"target\":\"4\"}");
  }

  @Test
  void aResultsFileThatIsNotResultsIsRefusedNamingTheLine() throws Exception {
    Path bad = dir.resolve("bad.jsonl");
    Files.write(bad, List.of(LINES.get(0), "{\"id\":"));
    assertThatThrownBy(() -> CsvReport.write(ResultLines.of(bad), dir.resolve("x.csv")))
        .hasMessageContaining(bad + " line 2: not JSON");
    assertThat(dir.resolve("x.csv")).as("nothing written").doesNotExist();
  }

  @Test
  void comparisonListsChangedCasesAndThePairedDifference() throws Exception {
    Path a = dir.resolve("a.jsonl");
    Path b = dir.resolve("b.jsonl");
    // A: p p f f e c  x(only A);  B: p f p f f p  y(only B)
    Files.write(a, List.of(line("1", "pass"), line("2", "pass"), line("3", "fail"), line("4", "fail"), line("5", "error"),
        line("6", "cancelled"), line("x", "pass")));
    Files.write(b, List.of(line("1", "pass"), line("2", "fail"), line("3", "pass"), line("4", "fail"), line("5", "fail"),
        line("6", "pass"), line("y", "fail")));

    RunComparison c = RunComparison.of(ResultLines.of(a), ResultLines.of(b));
    assertThat(c.common()).isEqualTo(6);
    assertThat(c.onlyInA()).isEqualTo(1);
    assertThat(c.onlyInB()).isEqualTo(1);
    assertThat(c.changes()).extracting(RunComparison.Change::id).containsExactly("2", "3", "5", "6");
    assertThat(c.count(RunComparison.Direction.PASS_TO_NOT_PASS)).isEqualTo(1);
    assertThat(c.count(RunComparison.Direction.NOT_PASS_TO_PASS)).isEqualTo(1);
    assertThat(c.count(RunComparison.Direction.OTHER)).as("error to fail, cancelled to pass").isEqualTo(2);
    // A judged 6 (not the cancelled one), passed 3; B judged 7, passed 3.
    assertThat(c.accuracyA().n()).isEqualTo(6);
    assertThat(c.accuracyA().value()).isEqualTo(0.5);
    assertThat(c.accuracyB().n()).isEqualTo(7);
    // Paired over the 5 judged in both: both pass 1, only A 1, only B 1, neither 2.
    assertThat(c.paired()).isEqualTo(dev.tally.core.stats.Estimates.pairedDifference(1, 1, 1, 2).orElseThrow());
  }

  @Test
  void groupsCountCancelledCasesButDoNotJudgeThemAndNameCasesWithoutTheField() throws Exception {
    Path results = dir.resolve("g.jsonl");
    Files.write(results, List.of("{\"id\":\"a\",\"verdict\":\"pass\",\"score\":0.5}", "{\"id\":\"b\",\"verdict\":\"cancelled\",\"score\":null}",
        "{\"id\":\"c\",\"verdict\":\"fail\",\"score\":null}", "{\"id\":\"d\",\"verdict\":\"error\",\"score\":null}"));
    Map<String, JsonNode> cases = Map.of("a", JSON.readTree("{\"id\":\"a\",\"metadata\":{\"subject\":\"x\"}}"),
        "b", JSON.readTree("{\"id\":\"b\",\"subject\":\"x\"}"), "c", JSON.readTree("{\"id\":\"c\"}"));

    JsonNode groups = ReportGroups.of(ResultLines.of(results), cases::get, "subject");
    assertThat(groups.get("by").asText()).isEqualTo("subject");
    assertThat(groups.get("truncated").asBoolean()).isFalse();
    JsonNode missing = groups.get("values").get(0);
    assertThat(missing.get("value").asText()).isEqualTo(dev.tally.core.stats.GroupedEstimates.MISSING);
    assertThat(missing.get("n").asLong()).as("c has no subject, d is not a known case").isEqualTo(2);
    assertThat(missing.get("accuracy").get("value").asDouble()).isZero();
    JsonNode x = groups.get("values").get(1);
    assertThat(x.get("value").asText()).isEqualTo("x");
    assertThat(x.get("n").asLong()).isEqualTo(2);
    assertThat(x.get("accuracy").get("n").asLong()).as("the cancelled case is not judged").isEqualTo(1);
    assertThat(x.get("meanScore").get("value").asDouble()).isEqualTo(0.5);
  }

  @Test
  void aRunWithACaseTwiceIsRefused() throws Exception {
    Path a = dir.resolve("a.jsonl");
    Files.write(a, List.of(line("1", "pass"), line("1", "fail")));
    assertThatThrownBy(() -> RunComparison.of(ResultLines.of(a), ResultLines.of(a))).hasMessageContaining("run A has the case \"1\" twice");
  }

  private static String line(String id, String verdict) {
    return "{\"id\":\"" + id + "\",\"verdict\":\"" + verdict + "\"}";
  }
}
