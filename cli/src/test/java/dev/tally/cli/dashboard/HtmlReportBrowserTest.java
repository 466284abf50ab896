package dev.tally.cli.dashboard;

import dev.tally.core.stats.Estimate;
import dev.tally.core.stats.EstimateText.Written;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.coordinator.report.HtmlReport;
import dev.tally.coordinator.report.ResultLines;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.support.ui.Select;

/**
 * The HTML report ({@link HtmlReport}) opened from a file in headless Chromium with no network: the
 * figures show, the script runs without a console error, a case's text that looks like markup stays text,
 * and a 100k-case report shows its first page, pages and filters. Screenshots go to {@value
 * Browser#SCREENSHOTS}.
 */
class HtmlReportBrowserTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A 100k-case report must show its first page within this long of opening, on a loaded 2-core machine. */
  private static final long BIG_REPORT_BUDGET_MILLIS = 15_000;

  @TempDir Path dir;

  private Browser browser;

  @AfterEach
  void close() {
    if (browser != null) {
      browser.close();
    }
  }

  private static final List<String> LINES = List.of(
      "{\"id\":\"a\",\"verdict\":\"pass\",\"score\":1.0,\"attempts\":1,\"worker\":\"w1\",\"durationMillis\":12,\"output\":\"42\"}",
      "{\"id\":\"b\",\"verdict\":\"fail\",\"score\":0.25,\"attempts\":1,\"worker\":\"w2\",\"durationMillis\":1500,"
          + "\"output\":\"</script><script>window.pwned=1</script><img src=x onerror=window.pwned=2>\"}",
      "{\"id\":\"c\",\"verdict\":\"error\",\"score\":null,\"attempts\":1,\"worker\":\"w1\",\"durationMillis\":3,\"output\":\"boom\"}",
      "{\"id\":\"d\",\"verdict\":\"error\",\"score\":null,\"attempts\":3,\"worker\":null,\"durationMillis\":null,\"output\":\"\","
          + "\"failure\":\"out of attempts: worker died 3 times\",\"history\":[{\"token\":1,\"worker\":\"w1\",\"ending\":\"lost\","
          + "\"detail\":\"worker died\",\"millis\":5}]}",
      "{\"id\":\"e\",\"verdict\":\"cancelled\",\"score\":null,\"attempts\":0,\"worker\":null,\"durationMillis\":null,\"output\":\"\","
          + "\"failure\":\"the run was cancelled before this case ended\"}");

  private static final String SUMMARY = "{\"runId\":7,\"total\":5,\"passed\":1,\"failed\":1,\"errored\":2,\"recorded\":3,\"jobsFailed\":1,"
      + "\"cancelled\":1,\"duplicatesSuppressed\":0,\"staleResultsFenced\":0,\"redeliveries\":2,"
      + "\"accuracy\":" + JSON.valueToTree(Written.percent(new Estimate(0.25, 4, 0.2165, 0.0456, 0.6994, 0.95, "wilson"))) + ","
      + "\"meanScore\":" + JSON.valueToTree(Written.mean(new Estimate(0.625, 2, 0.375, -4.14, 5.39, 0.95, "student-t"))) + ","
      + "\"rows\":[{\"label\":\"total\",\"count\":5},{\"label\":\"passed\",\"count\":1},{\"label\":\"failed\",\"count\":1},"
      + "{\"label\":\"errored\",\"count\":2},{\"label\":\"  of which out of attempts\",\"count\":1},{\"label\":\"cancelled\",\"count\":1},"
      + "{\"label\":\"recorded\",\"count\":3},{\"label\":\"redeliveries\",\"count\":2},{\"label\":\"duplicates suppressed\",\"count\":0},"
      + "{\"label\":\"stale results fenced\",\"count\":0}],"
      + "\"wallMillis\":2000,\"runWallMillis\":2500}";

  @Test
  void theReportOpensOfflineShowsTheFiguresAndEveryCaseAsText() throws Exception {
    Path results = Files.write(dir.resolve("results.jsonl"), LINES);
    Path html = dir.resolve("report.html");
    HtmlReport.write(JSON.readTree(SUMMARY), ResultLines.of(results), id -> id.equals("a") ? "What is 6 x 7?" : null, html);

    browser = new Browser(dir.resolve("chromium-profile"));
    browser.driver.get(html.toUri().toString());
    browser.waiting().until(d -> browser.all("#case-table tbody tr.case").size() == 5);

    assertThat(browser.text("#accuracy")).isEqualTo("25.0% (95% CI 4.6-69.9%, Wilson, n=4)");
    assertThat(browser.text("#mean-score")).isEqualTo("0.625 (SE 0.375, 95% CI -4.140 to 5.390, Student's t, n=2 scored)");
    assertThat(browser.text("#count-errored")).isEqualTo("2");
    assertThat(browser.text("#count-of-which-out-of-attempts")).isEqualTo("1"); // the summary's rows, in its words
    assertThat(browser.text("#count-duplicates-suppressed")).isEqualTo("0");
    assertThat(browser.text("#page-info")).isEqualTo("1-5 of 5 cases");
    assertThat(browser.texts("#case-table tbody tr.case td:nth-child(2)")).containsExactly("pass", "fail", "error", "error", "cancelled");
    assertThat(browser.texts("#case-table tbody tr.case td:nth-child(7)").get(0)).isEqualTo("What is 6 x 7?");
    assertThat(browser.texts("#case-table tbody tr.case td:nth-child(8)").get(1)).startsWith("</script><script>");
    assertThat(browser.script("return window.pwned === undefined;")).as("a case's output is never markup").isEqualTo(true);

    // A click shows the whole case: its failure and attempt history.
    browser.all("#case-table tbody tr.case").get(3).click();
    browser.waiting().until(d -> !browser.all("#case-table tbody tr.detail").isEmpty());
    assertThat(browser.text("#case-table tbody tr.detail")).contains("out of attempts: worker died 3 times").contains("worker died");

    new Select(browser.find("#verdict-filter")).selectByVisibleText("error");
    browser.waiting().until(d -> browser.all("#case-table tbody tr.case").size() == 2);
    assertThat(browser.text("#page-info")).isEqualTo("1-2 of 2 matching cases (5 in all)");
    browser.screenshot("html-report");
    assertThat(browser.scriptErrors()).isEmpty();
  }

  @Test
  void aReportOf100kCasesShowsItsFirstPageAndPagesAndFilters() throws Exception {
    Path results = dir.resolve("results.jsonl");
    int total = 100_000;
    try (BufferedWriter w = Files.newBufferedWriter(results)) {
      for (int i = 0; i < total; i++) {
        String verdict = i % 10 == 0 ? "fail" : "pass";
        w.write("{\"id\":\"case-" + i + "\",\"verdict\":\"" + verdict + "\",\"score\":null,\"attempts\":1,\"worker\":\"w" + (i % 4)
            + "\",\"durationMillis\":" + (i % 97) + ",\"output\":\"answer " + i + " with some text a case's output tail has\"}\n");
      }
    }
    String summary = "{\"runId\":3,\"total\":100000,\"passed\":90000,\"failed\":10000,\"errored\":0,\"cancelled\":0,"
        + "\"accuracy\":{\"value\":0.9,\"n\":100000,\"standardError\":0.00095,\"low\":0.8981,\"high\":0.9018,\"confidence\":0.95,\"method\":\"wilson\"},"
        + "\"meanScore\":null}";
    Path html = dir.resolve("big.html");
    HtmlReport.write(JSON.readTree(summary), ResultLines.of(results), HtmlReport.Inputs.NONE, html);

    browser = new Browser(dir.resolve("chromium-profile"));
    long start = System.nanoTime();
    browser.driver.get(html.toUri().toString());
    browser.waiting().until(d -> "1-100 of 100000 cases".equals(browser.text("#page-info")));
    long millis = (System.nanoTime() - start) / 1_000_000;
    assertThat(millis).as("first page of a 100k-case report, ms").isLessThan(BIG_REPORT_BUDGET_MILLIS);
    assertThat(browser.all("#case-table tbody tr.case")).hasSize(100);
    assertThat(browser.text("#mean-score")).isEqualTo("-");

    browser.find("#next-page").click();
    browser.waiting().until(d -> "101-200 of 100000 cases".equals(browser.text("#page-info")));
    assertThat(browser.texts("#case-table tbody tr.case td:first-child").get(0)).isEqualTo("case-100");

    browser.find("#search").sendKeys("case-99999");
    browser.waiting().until(d -> "1-1 of 1 matching cases (100000 in all)".equals(browser.text("#page-info")));
    assertThat(browser.texts("#case-table tbody tr.case td:first-child")).containsExactly("case-99999");
    assertThat(browser.scriptErrors()).isEmpty();
  }
}
