package dev.tally.cli;

import dev.tally.core.store.RunState;
import dev.tally.cli.client.ApiClient;
import dev.tally.core.store.RunCounters;
import dev.tally.http.ApiServer;
import dev.tally.http.ApiViews;
import dev.tally.http.dto.CountersObject;
import dev.tally.http.dto.RunObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;

/**
 * Waits for a run on a server to end, as {@code tally wait} and {@code tally submit --wait} do: asks for
 * the run ({@code GET /api/v1/runs/ID}) every {@link #POLL_PERIOD}, draws {@code tally run}'s progress line
 * on a terminal, and ends with the run's counters and {@code tally run}'s exit code ({@link
 * Main#exitCodeOf}).
 *
 * <p>Why polling rather than the event stream: one small read per period costs the server next to nothing
 * (its reads never wait for the writer), and a poll needs no state to survive a server restart: each one
 * is a request with the client's retry policy, so a wait outlives a server that is killed and started
 * again, where an event stream would have to be reconnected and its missed events made up for.
 *
 * <p>Thread-safety: one call per thread; stateless otherwise.
 */
final class RunWait {
  /**
   * How often the run is asked for: twice a second, the event stream's own pace (4 a second per run) halved,
   * smooth enough for a progress bar.
   */
  static final Duration POLL_PERIOD = Duration.ofMillis(500);

  private RunWait() {}

  /**
   * Waits for run {@code runId} to end.
   *
   * @param progress whether to draw the progress line (only on a terminal)
   * @return the exit code: {@link Main#exitCodeOf} of the ended run
   * @throws ApiClient.Refused if the server refused (the run does not exist, a wrong token)
   * @throws ApiClient.Unreachable if the server gave no answer within the retries
   * @throws IOException if the server's answer is not a run
   */
  static int await(ApiClient client, long runId, boolean progress, PrintWriter out, PrintWriter err)
      throws ApiClient.Refused, ApiClient.Unreachable, IOException, InterruptedException {
    String path = ApiServer.BASE + "/runs/" + runId;
    String what = "asking for run " + runId;
    RunObject run = ApiClient.requireOk(client.send(ApiClient.Request.get(path), what, "")).json(RunObject.class);
    ProgressLine line = new ProgressLine();
    ProgressBar bar = progress && !ended(run) && System.console() != null
        ? RunnerCommand.progressBar(runId, run.total(), line, new ConsoleProgressBarConsumer(System.err)) : null;
    try {
      while (!ended(run)) {
        RunnerCommand.update(bar, line, counters(run));
        Thread.sleep(POLL_PERIOD.toMillis()); // the pace of polling, not a stand-in for a condition
        run = ApiClient.requireOk(client.send(ApiClient.Request.get(path), what, "")).json(RunObject.class);
      }
      RunnerCommand.update(bar, line, counters(run));
    } finally {
      if (bar != null) {
        bar.close();
      }
    }
    print(run, out);
    printNotPassed(client, run, out, err);
    return Main.exitCodeOf(run.counters().passed(), run.total());
  }

  /** How long the list of the cases that did not pass may take: extra lines, after the run's result is known. */
  static final Duration NOT_PASSED_TIMEOUT = Duration.ofSeconds(5);

  /**
   * Names the cases of the ended run that did not pass, as {@code tally run}'s summary does ({@link
   * SummaryTable}): one try of each page, within {@link #NOT_PASSED_TIMEOUT}; a server that cannot say
   * costs a line, not the wait's result.
   */
  private static void printNotPassed(ApiClient client, RunObject run, PrintWriter out, PrintWriter err)
      throws InterruptedException {
    RunCounters c = counters(run);
    if (c.failed() + dev.tally.coordinator.report.RunReport.errored(c) == 0) {
      return;
    }
    ApiClient once = client.once(NOT_PASSED_TIMEOUT);
    java.util.List<SummaryTable.NotPassed> found = new java.util.ArrayList<>();
    try {
      for (SummaryTable.NotPassedPage page : SummaryTable.NotPassedPage.values()) {
        String path = ApiServer.BASE + "/runs/" + run.id() + "/cases?" + page.apiQuery();
        ApiClient.requireOk(once.send(ApiClient.Request.get(path), "listing run " + run.id() + "'s cases", ""))
            .json(dev.tally.http.dto.CaseList.class).cases().forEach(x -> found.add(SummaryTable.NotPassed.of(x)));
      }
    } catch (ApiClient.Refused | ApiClient.Unreachable | IOException e) {
      err.println("tally: cannot list the cases that did not pass: " + e.getMessage());
      return;
    }
    // A cancelled run has ended too: its results exist.
    String where = dev.tally.core.store.RunView.shownTerminal(run.state()) ? "'tally results " + run.id() + "'"
        : "'tally results " + run.id() + "' once the run finishes";
    SummaryTable.printNotPassed(out, c, SummaryTable.firstInOrder(found), where);
  }

  /** Whether the wait is over: the run finished, was cancelled, or is paused (it goes on only when resumed). */
  static boolean ended(RunObject run) {
    return !RunState.RUNNING.wireName().equals(run.state());
  }

  /** The run's counters as the progress line takes them. */
  static RunCounters counters(RunObject run) {
    return ApiViews.runCounters(run.total(), run.counters());
  }

  /** One line for people: the run's state and what its cases came to. */
  static void print(RunObject run, PrintWriter out) {
    CountersObject c = run.counters();
    StringBuilder s = new StringBuilder("run ").append(run.id()).append(' ').append(run.state()).append(": ")
        .append(Words.count(run.total(), "case")).append(", ").append(c.passed()).append(" passed, ").append(c.failed())
        .append(" failed, ").append(c.errored()).append(" errored");
    if (c.jobsFailed() > 0) {
      s.append(" (").append(c.jobsFailed()).append(" out of attempts)");
    }
    if (c.cancelled() > 0) {
      s.append(", ").append(c.cancelled()).append(" cancelled");
    }
    s.append("; ").append(c.redeliveries()).append(" redelivered, ").append(c.duplicatesSuppressed())
        .append(" duplicates suppressed, ").append(c.staleResultsFenced()).append(" stale results fenced");
    if (run.accuracy() != null) {
      s.append("; accuracy ").append(run.accuracy().text());
    }
    if (run.meanScore() != null) {
      s.append("; mean score ").append(run.meanScore().text());
    }
    if (run.usage() != null) {
      s.append("; tokens ").append(run.usage().promptTokens()).append(" prompt + ").append(run.usage().completionTokens())
          .append(" completion");
      if (run.usage().costUsd() != null) {
        s.append(String.format(java.util.Locale.ROOT, ", cost $%.4f", run.usage().costUsd()));
      }
    }
    if (run.pausedReason() != null) {
      // The reason may quote a case's output (fail fast): shown as a terminal may show it.
      s.append("; paused: ").append(TerminalText.safe(run.pausedReason(), Main.MAX_ERROR_CHARS)).append(" (go on: POST ").append(ApiServer.BASE).append("/runs/")
          .append(run.id()).append("/resume)");
    }
    out.println(s);
    out.flush();
  }
}
