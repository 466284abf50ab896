package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code tally run --http}: the same API, served while the run goes on, closed when it is over. */
class RunHttpTest {
  private static final Pattern API = Pattern.compile("API at (http://127\\.0\\.0\\.1:\\d+)/api/v1 ");

  @TempDir Path dir;

  @Test
  void servesTheRunOverTheApiWhileItRunsWithItsToken() throws Exception {
    // 200 cases of 20-80 ms on 2 slots: some 5 s, for the API to be read while the run goes on.
    Path dataset = TallyProcess.sleepDataset(dir.resolve("cases.jsonl"), 200, "c", 3);
    Path token = Files.writeString(dir.resolve("token"), "run-http-token\n");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    CompletableFuture<Integer> run = CompletableFuture.supplyAsync(() -> cl.execute("run", dataset.toString(), "--workers=0",
        "--in-process=2", "--evaluator=sleep", "--db=" + dir.resolve("t.db"), "--out=" + dir.resolve("r.jsonl"),
        "--summary=" + dir.resolve("s.json"), "--no-progress", "--http=127.0.0.1:0", "--api-token-file=" + token));

    String[] url = new String[1];
    await().atMost(Duration.ofSeconds(60)).until(() -> {
      Matcher m = API.matcher(err.toString());
      return m.find() && (url[0] = m.group(1)) != null;
    });
    assertThat(err.toString()).contains("dashboard at " + url[0] + "/ while this runs");
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url[0] + "/api/v1/runs/1"))
        .header("Authorization", "Bearer run-http-token").build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(new ObjectMapper().readTree(r.body()).get("total").asInt()).isEqualTo(200);
    // Its metrics count what its scheduler records as it goes (the observer is wired by tally run too).
    await("the scheduler's metrics").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> {
      String metrics = http.send(HttpRequest.newBuilder(URI.create(url[0] + "/metrics"))
          .header("Authorization", "Bearer run-http-token").build(), HttpResponse.BodyHandlers.ofString()).body();
      return sample(metrics, "tally_records_total{status=\"recorded\"}") >= 10
          && sample(metrics, "tally_dispatch_latency_seconds_count") >= 10;
    });

    assertThat(run.get(120, TimeUnit.SECONDS)).as(err.toString()).isZero();
    assertThat(err.toString()).doesNotContain("run-http-token");
    // The run is over: so is its API.
    assertThatThrownBy(() -> http.send(HttpRequest.newBuilder(URI.create(url[0] + "/api/v1/runs")).build(),
        HttpResponse.BodyHandlers.ofString())).isInstanceOf(ConnectException.class);
  }

  /** A series' value in a Prometheus text answer, or -1 if it is not there. */
  private static double sample(String metrics, String series) {
    return metrics.lines().filter(l -> l.startsWith(series + " ")).mapToDouble(l -> Double.parseDouble(l.substring(series.length() + 1)))
        .findFirst().orElse(-1);
  }
}
