package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.RecordStatus;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What each scheduler hook does to the meters, as Prometheus sees them. */
class SchedulerMetricsTest {
  private final SchedulerMetrics metrics = new SchedulerMetrics();

  private Map<String, Double> scrape() {
    return MetricsTest.samples(metrics.registry().scrape());
  }

  @Test
  void countsEveryResultByStatusAndTimesOnlyRecordedOnesWhoseLeaseItSaw() {
    metrics.recorded(RecordStatus.RECORDED, TimeUnit.MILLISECONDS.toNanos(20));
    metrics.recorded(RecordStatus.RECORDED, -1); // re-sent from an earlier session: no lease of ours to time
    metrics.recorded(RecordStatus.DUPLICATE, TimeUnit.MILLISECONDS.toNanos(30));
    metrics.recorded(RecordStatus.FENCED, TimeUnit.MILLISECONDS.toNanos(40));
    metrics.recorded(RecordStatus.FENCED, -1);
    Map<String, Double> s = scrape();
    assertThat(s).containsEntry("tally_records_total{status=\"recorded\"}", 2.0)
        .containsEntry("tally_records_total{status=\"duplicate\"}", 1.0)
        .containsEntry("tally_records_total{status=\"fenced\"}", 2.0)
        .containsEntry("tally_dispatch_latency_seconds_count", 1.0)
        .containsEntry("tally_dispatch_latency_seconds_sum", 0.02)
        .containsEntry("tally_dispatch_latency_seconds_bucket{le=\"+Inf\"}", 1.0);
    // Cumulative buckets: none below 20 ms holds it, every one from 20 ms up does.
    s.forEach((series, value) -> {
      if (series.startsWith("tally_dispatch_latency_seconds_bucket{le=\"") && !series.contains("+Inf")) {
        double le = Double.parseDouble(series.substring(series.indexOf('"') + 1, series.lastIndexOf('"')));
        assertThat(value).as(series).isEqualTo(le >= 0.02 ? 1.0 : 0.0);
      }
    });
  }

  @Test
  void countsEveryCommitAndItsTimeButEvalsPerCommitOnlyOfCommitsThatCarriedResults() {
    metrics.committed(0, TimeUnit.MILLISECONDS.toNanos(1)); // leases and renewals only
    metrics.committed(5, TimeUnit.MILLISECONDS.toNanos(3));
    metrics.committed(3, TimeUnit.MILLISECONDS.toNanos(2));
    Map<String, Double> s = scrape();
    assertThat(s).containsEntry("tally_store_commits_total", 3.0)
        .containsEntry("tally_store_commit_seconds_count", 3.0)
        .containsEntry("tally_store_commit_seconds_sum", 0.006)
        .containsEntry("tally_evals_per_commit_count", 2.0)
        .containsEntry("tally_evals_per_commit_sum", 8.0)
        .containsEntry("tally_evals_per_commit_max", 5.0);
  }

  @Test
  void everyMeterIsThereAtZeroBeforeAnything() {
    assertThat(scrape()).containsEntry("tally_records_total{status=\"recorded\"}", 0.0)
        .containsEntry("tally_records_total{status=\"duplicate\"}", 0.0)
        .containsEntry("tally_records_total{status=\"fenced\"}", 0.0)
        .containsEntry("tally_store_commits_total", 0.0)
        .containsEntry("tally_evals_per_commit_count", 0.0)
        .containsEntry("tally_dispatch_latency_seconds_count", 0.0);
  }
}
