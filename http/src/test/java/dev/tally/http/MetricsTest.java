package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /metrics} in Prometheus' text format: the store's figures, and the scheduler's live meters fed
 * by its observer while the server runs cases.
 */
class MetricsTest {
  @TempDir Path dir;

  /** Every sample of a Prometheus text answer, by series ({@code name{labels}}), comments left out. */
  static Map<String, Double> samples(String text) {
    Map<String, Double> samples = new LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
    return samples;
  }

  @Test
  void showsTheStoresFiguresAndWhatTheSchedulerDidForTheCasesItRan() throws Exception {
    try (TestApi t = TestApi.start(dir).withWorker(2)) {
      t.runToEnd("m.jsonl", 6);
      t.runToEnd("n.jsonl", 9);
      t.createRun("waiting.jsonl", 2, "noop");
      HttpResponse<String> r = t.get("/metrics");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
      Map<String, Double> s = samples(r.body());
      // The store's figures (gauges).
      assertThat(s).containsEntry("tally_runs{state=\"finished\"}", 2.0)
          .containsEntry("tally_runs{state=\"running\"}", 1.0)
          .containsEntry("tally_cases{verdict=\"pass\"}", 15.0)
          .containsEntry("tally_cases{verdict=\"fail\"}", 0.0)
          .containsEntry("tally_redeliveries", 0.0)
          .containsKey("tally_workers{state=\"live\"}")
          .containsKey("tally_worker_ejections")
          .containsEntry("tally_leading", 1.0); // the one server on its store leads
      assertThat(s.get("tally_leader_epoch")).isPositive();
      // The scheduler's (counters and distributions from its observer): one record per case, one latency per
      // recorded result, every result carried by some commit.
      assertThat(s).containsEntry("tally_records_total{status=\"recorded\"}", 15.0)
          .containsEntry("tally_records_total{status=\"duplicate\"}", 0.0)
          .containsEntry("tally_records_total{status=\"fenced\"}", 0.0)
          .containsEntry("tally_dispatch_latency_seconds_count", 15.0)
          .containsEntry("tally_evals_per_commit_sum", 15.0);
      assertThat(s.get("tally_dispatch_latency_seconds_sum")).as("15 noop cases, each leased then done").isPositive().isLessThan(15 * 60.0);
      assertThat(s.get("tally_store_commits_total")).isGreaterThanOrEqualTo(s.get("tally_evals_per_commit_count")).isPositive();
      assertThat(s.get("tally_store_commit_seconds_count")).isEqualTo(s.get("tally_store_commits_total"));
      assertThat(s.get("tally_evals_per_commit_count")).isBetween(1.0, 15.0);
      // The histogram: cumulative buckets up to +Inf, which holds every recorded result.
      assertThat(s.keySet()).filteredOn(k -> k.startsWith("tally_dispatch_latency_seconds_bucket{")).hasSizeGreaterThan(10);
      assertThat(s).containsEntry("tally_dispatch_latency_seconds_bucket{le=\"+Inf\"}", 15.0);
      // One owner per name: the store's figures no longer shadow the live record counts.
      assertThat(s.keySet()).noneMatch(k -> k.startsWith("tally_records{"));
    }
  }
}
