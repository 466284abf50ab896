package dev.tally.http;

import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.RecordStatus;
import dev.tally.core.schedule.SchedulerObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The metrics a scheduler reports as it works, bound to Micrometer: a {@link SchedulerObserver} registered
 * with the coordinator's builder before it starts ({@link #observing}), then handed to {@link
 * ApiServer#start}, whose {@link ApiMetrics} adds the store's figures to the same registry and
 * serves them all at {@code GET /metrics}.
 *
 * <p><b>What is measured</b> (names as Prometheus shows them), each counted by this process since it
 * started (a Prometheus counter: a restart starts again at 0, which {@code rate()} and {@code increase()}
 * take in their stride):
 *
 * <ul>
 *   <li>{@code tally_records_total{status}}: results the store judged, by what it made of them ({@code
 *       recorded}, {@code duplicate}, {@code fenced}; {@link RecordStatus});
 *   <li>{@code tally_store_commits_total}: scheduler steps committed to the store, and {@code
 *       tally_store_commit_seconds}: how long each commit took;
 *   <li>{@code tally_evals_per_commit}: results carried by one commit that carried any (a distribution
 *       summary: the batching that makes the store fast shows as its mean; the commits of leases and
 *       renewals alone would only pull it towards 0);
 *   <li>{@code tally_dispatch_latency_seconds}: from the lease of each recorded attempt to its result's
 *       arrival at the scheduler, as a histogram ({@code _bucket} series), on the monotonic clock. A
 *       result whose lease was not this process's (re-sent from an earlier coordinator's session) has no
 *       latency to report and is left out of the histogram, not of the record counts.
 * </ul>
 *
 * <p>The figures that describe the store rather than this process's work (runs by state, cases by verdict,
 * redeliveries, workers, suspicion, ejections) are {@link ApiMetrics}' gauges. Each metric name has one owner.
 *
 * <p>Thread-safety: the hooks are called on the scheduler's thread; Micrometer's meters take updates and
 * scrapes from any threads, so recording never waits for a scrape.
 */
public final class SchedulerMetrics implements SchedulerObserver {
  /**
   * The smallest dispatch latency the histogram resolves: a noop case on loopback takes about a
   * millisecond from lease to result.
   */
  static final Duration MIN_DISPATCH_LATENCY = Duration.ofMillis(1);
  /** The largest: an hour, six times the default case timeout of 10 minutes with its retries and queueing. */
  static final Duration MAX_DISPATCH_LATENCY = Duration.ofHours(1);

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Map<RecordStatus, Counter> records = new EnumMap<>(RecordStatus.class);
  private final Counter commits;
  private final Timer commitTime;
  private final DistributionSummary evalsPerCommit;
  private final Timer dispatchLatency;

  /**
   * New meters at zero, registered as an observer of the coordinator {@code builder} will start: the way
   * to make them, so that none is served without being fed.
   *
   * @param builder the builder of the coordinator whose scheduler is measured, before {@code start()}
   * @return the meters, for {@link ApiServer#start}
   */
  public static SchedulerMetrics observing(CoordinatorBuilder builder) {
    SchedulerMetrics metrics = new SchedulerMetrics();
    builder.observer(metrics);
    return metrics;
  }

  /** Meters at zero, in a registry of their own; unobserved until registered with a scheduler. */
  SchedulerMetrics() {
    for (RecordStatus status : RecordStatus.values()) {
      records.put(status, Counter.builder("tally.records")
          .description("Results the store judged, by what it made of them, since this process started")
          .tag("status", status.name().toLowerCase(Locale.ROOT)).register(registry));
    }
    this.commits = Counter.builder("tally.store.commits")
        .description("Scheduler steps this process committed to the store").register(registry);
    this.commitTime = Timer.builder("tally.store.commit")
        .description("How long one scheduler step's store commit took").register(registry);
    this.evalsPerCommit = DistributionSummary.builder("tally.evals.per.commit")
        .description("Results carried by one store commit that carried any").register(registry);
    this.dispatchLatency = Timer.builder("tally.dispatch.latency")
        .description("Lease to result of each recorded attempt")
        .publishPercentileHistogram()
        .minimumExpectedValue(MIN_DISPATCH_LATENCY)
        .maximumExpectedValue(MAX_DISPATCH_LATENCY)
        .register(registry);
  }

  /** The registry these meters live in; {@link ApiMetrics} adds the store's gauges to it. */
  PrometheusMeterRegistry registry() {
    return registry;
  }

  @Override
  public void recorded(RecordStatus status, long dispatchLatencyNanos) {
    records.get(status).increment();
    if (status == RecordStatus.RECORDED && dispatchLatencyNanos >= 0) {
      dispatchLatency.record(dispatchLatencyNanos, TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void committed(int evals, long commitNanos) {
    commits.increment();
    commitTime.record(commitNanos, TimeUnit.NANOSECONDS);
    if (evals > 0) {
      evalsPerCommit.record(evals);
    }
  }
}
