package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code GET /metrics} in Prometheus' text format, with the store's figures. */
class MetricsTest {
  @TempDir Path dir;

  @Test
  void showsRunsCasesRecordsWorkersAndCommits() throws Exception {
    try (TestApi t = TestApi.start(dir).withWorker(2)) {
      t.runToEnd("m.jsonl", 6);
      t.createRun("waiting.jsonl", 2, "noop");
      t.api.metrics().recordDispatch(3_000_000);
      HttpResponse<String> r = t.get("/metrics");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
      assertThat(r.body())
          .contains("tally_runs{state=\"finished\"} 1.0")
          .contains("tally_runs{state=\"running\"} 1.0")
          .contains("tally_cases{verdict=\"pass\"} 6.0")
          .contains("tally_records{status=\"recorded\"} 6.0")
          .contains("tally_records{status=\"duplicate\"} 0.0")
          .contains("tally_redeliveries 0.0")
          .containsPattern("tally_store_commits_total [1-9]")
          .contains("tally_dispatch_latency_seconds_count 1")
          .contains("tally_dispatch_latency_seconds_bucket");
    }
  }
}
