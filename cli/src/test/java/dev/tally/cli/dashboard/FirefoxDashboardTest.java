package dev.tally.cli.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.cli.TallyProcess;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard in a real Firefox (headless {@code firefox-esr}, driven over WebDriver BiDi by
 * {@link Firefox}) against a real {@code tally server} with worker processes: issue 9 says it works in
 * Firefox as in Chromium. One server and one Firefox serve the whole class (each start costs seconds on
 * this machine); each test looks at the runs it made itself, and fails on any console error of its own.
 * Screenshots go to {@code target/dashboard-screenshots/firefox-*.png}.
 */
class FirefoxDashboardTest {
  private static final String TOKEN = DashboardServer.TOKEN;

  @TempDir static Path dir;
  private static DashboardServer server;
  private static Firefox firefox;

  @BeforeAll
  static void startFirefoxAndServer() throws Exception {
    // Firefox first: a machine without it fails at once, with what to install.
    firefox = new Firefox();
    server = DashboardServer.start(dir, "--workers=2", "--slots=2");
    firefox.signIn(server.url + "/#/runs", TOKEN);
    assertThat(firefox.consoleErrors()).as("console errors in Firefox while signing in").isEmpty();
  }

  @AfterAll
  static void stopAll() {
    try {
      if (firefox != null) {
        firefox.close();
      }
    } finally {
      if (server != null) {
        server.close();
      }
    }
  }

  @BeforeEach
  void ownConsole() {
    firefox.clearConsole();
  }

  @AfterEach
  void noConsoleErrors() {
    assertThat(firefox.consoleErrors()).as("console errors in Firefox").isEmpty();
  }

  @Test
  void signingInKeepsTheTokenInTheTabAndOutOfEveryUrl() throws Exception {
    firefox.navigate(server.url + "/#/runs");
    firefox.until("the Runs page", () -> "Runs".equals(firefox.text("main h1")));
    assertThat(firefox.js("() => Object.values(sessionStorage)").toString()).as("the token kept in sessionStorage").contains(TOKEN);
    assertThat(firefox.currentUrl()).doesNotContain(TOKEN);
    // Every request the page made (the API's reads and its event stream) carried the token in a header only.
    JsonNode requested = firefox.js("() => performance.getEntriesByType('resource').map(e => e.name)");
    assertThat(requested).as("requests the page made").isNotEmpty();
    assertThat(requested.toString()).doesNotContain(TOKEN);
  }

  @Test
  void theRunsPageShowsARunSubmittedThroughTheApiUntilItFinishesWithoutAReload() throws Exception {
    firefox.navigate(server.url + "/#/runs");
    firefox.until("the Runs page", () -> "Runs".equals(firefox.text("main h1")));
    // A reload would lose this mark: the page must change in place.
    firefox.js("() => { window.tallyTestMark = 'no reload'; }");
    Path dataset = TallyProcess.sleepDataset(dir.resolve("runs-page.jsonl"), 20, "r", 7);
    long runId = server.submit("{\"name\":\"firefox runs page\",\"evaluator\":{\"kind\":\"sleep\"}}", dataset).get("id").asLong();

    String row = "tr[data-run='" + runId + "']";
    firefox.until("run " + runId + " on the Runs page", () -> firefox.count(row) == 1);
    firefox.until("run " + runId + " finished on the Runs page", () -> "finished".equals(firefox.text(row + " .badge")));
    assertThat(firefox.js("() => window.tallyTestMark").asText()).as("the page was not reloaded").isEqualTo("no reload");
    assertThat(firefox.text(row)).contains("firefox runs page");
    firefox.screenshot("runs");
  }

  @Test
  void theRunPageShowsItsFiguresItsCasesAndACasesAttempts() throws Exception {
    Path dataset = DashboardServer.scoredDataset(dir.resolve("scored.jsonl"));
    long runId = server.submit(DashboardServer.scoredRunHeader("firefox scored"), dataset).get("id").asLong();
    firefox.navigate(server.url + "/#/runs/" + runId);
    untilOnRun(runId, "run " + runId + " finished with its summary shown",
        () -> "finished".equals(firefox.text("#run-state")) && firefox.count("#summary-section:not([hidden])") == 1);

    assertThat(firefox.text("[data-figure='passed']")).isEqualTo("7");
    assertThat(firefox.text("[data-figure='accuracy']")).isEqualTo("70.0%");
    assertThat(firefox.text("[data-figure='mean score']")).isEqualTo("0.550");
    assertThat(firefox.text("#summary")).contains(", Wilson, n=10)").contains("Student's t").contains("n=10 scored");
    firefox.until("the cases table", () -> firefox.count("#cases tbody tr.case-row") == 10);
    assertThat(firefox.js("() => [...document.querySelectorAll('#cases tbody tr.case-row td:nth-child(2)')]"
        + ".map(td => td.textContent.trim())").toString()).contains("\"s1\"").contains("\"s10\"");

    firefox.click("#cases tbody tr.case-row .case-open");
    firefox.until("one case's attempts", () -> firefox.count("#cases tr.detail table.attempts tbody tr") >= 1);
    assertThat(firefox.text("#cases tr.detail table.attempts")).contains("recorded").contains("local-");
    firefox.screenshot("run");
  }

  /**
   * {@link Firefox#until}, and when it times out, what the API and the page said of run {@code runId} at
   * that moment: whether the run itself was late or the page did not follow it.
   */
  private static void untilOnRun(long runId, String what, java.util.concurrent.Callable<Boolean> condition) throws Exception {
    try {
      firefox.until(what, condition);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError(what + " not seen; the API says " + server.get("/api/v1/runs/" + runId)
          + "; the page's run state " + firefox.text("#run-state") + ", its URL " + firefox.currentUrl()
          + "; workers " + server.get("/api/v1/workers"), e);
    }
  }

  @Test
  void theWorkersPageShowsTheLiveWorkers() throws Exception {
    String first = server.liveWorkerId("local-1");
    String second = server.liveWorkerId("local-2");
    firefox.navigate(server.url + "/#/workers");
    for (String id : List.of(first, second)) {
      firefox.until("worker " + id + " live on the Workers page",
          () -> "live".equals(firefox.text("tr[data-worker='" + id + "'] [data-state]")));
    }
    assertThat(firefox.text("tr[data-worker='" + first + "']")).contains("local-1");
    firefox.screenshot("workers");
  }

  @Test
  void submitPressedTwiceOnTheNewRunFormMakesOneRunAndThePageGoesToIt() throws Exception {
    int before = server.runCount();
    Path dataset = TallyProcess.sleepDataset(dir.resolve("new-run.jsonl"), 15, "n", 9);
    firefox.navigate(server.url + "/#/new");
    firefox.until("the New-run form", () -> firefox.count("#new-run") == 1);
    firefox.chooseFile("#dataset", dataset);
    firefox.select("select[name=kind]", "sleep");
    firefox.js("() => { document.querySelector('input[name=name]').value = ''; }");
    firefox.type("input[name=name]", "from firefox");
    String key = firefox.text("#key");
    firefox.screenshot("new-run");
    firefox.click("#submit", 2);

    firefox.until("the page on the new run", () -> firefox.currentUrl().matches(".*#/runs/\\d+$"));
    String url = firefox.currentUrl();
    long runId = Long.parseLong(url.substring(url.lastIndexOf('/') + 1));
    firefox.until("run " + runId + " finished", () -> "finished".equals(firefox.text("#run-state")));
    // Both presses were sent (the server answered the second with the first's run), and made one run.
    assertThat(firefox.js("() => " + DashboardServer.SUBMISSIONS_SENT).asInt()).as("submissions the page sent").isGreaterThanOrEqualTo(2);
    assertThat(server.runCount()).as("runs after Submit pressed twice").isEqualTo(before + 1);
    JsonNode run = server.get("/api/v1/runs/" + runId);
    assertThat(run.get("name").asText()).isEqualTo("from firefox");
    assertThat(run.get("counters").get("passed").asLong()).isEqualTo(15);
    assertThat(firefox.js("() => sessionStorage.getItem('tally.submission')").isNull()).as("the confirmed key forgotten").isTrue();
    assertThat(key).isNotBlank();
    firefox.screenshot("new-run-submitted");
  }
}
