package dev.tally.http;

import dev.tally.coordinator.Coordinator;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.WorkerStatus;
import io.javalin.http.Context;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.ArrayList;
import dev.tally.core.store.RunState;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The coordinator's metrics for Prometheus ({@code GET /metrics}, text format), through Micrometer: the
 * store's figures as gauges, beside the scheduler's live meters ({@link SchedulerMetrics}: records by
 * status, store commits, evals per commit, dispatch latency) in the same registry. Each metric name has one
 * owner: what the store holds is read here, what this process does is counted there.
 *
 * <p><b>What is measured here</b> (names as Prometheus shows them):
 *
 * <ul>
 *   <li>{@code tally_runs{state}}: runs in the store by state;
 *   <li>{@code tally_cases{verdict}}: cases of every run that ended pass, fail or error (error counts the
 *       cases out of attempts, as the summary does);
 *   <li>{@code tally_redeliveries}: attempts of every run that put their case back in the queue;
 *   <li>{@code tally_workers{state}}: workers live and left; {@code tally_worker_suspicion{worker,id}}: each
 *       live worker's failure-detector suspicion; {@code tally_worker_ejections}: outlier ejections so far;
 *   <li>{@code tally_leading}: 1 if this coordinator leads its store, 0 if it stands by; {@code
 *       tally_leader_epoch}: the store's leader epoch as it last saw it.
 * </ul>
 *
 * <p>These are read once per scrape, on the scraping thread, from the store's read side, so a scrape never
 * waits for the scheduler's writer; being the store's, they survive a restart of the coordinator.
 *
 * <p>Thread-safety: safe from any thread; scrapes are serialized.
 */
public final class ApiMetrics {

  private final PrometheusMeterRegistry registry;
  private final Store store;
  private final MultiGauge suspicion;
  private volatile Snapshot snapshot = Snapshot.EMPTY;

  ApiMetrics(Coordinator coordinator, SchedulerMetrics live) {
    this.store = coordinator.store();
    this.registry = live.registry();
    for (RunState state : RunState.values()) {
      gauge("tally.runs", "Runs in the store by state", Tags.of("state", state.wireName()), s -> s.runs(state));
    }
    gauge("tally.cases", "Cases that ended, by verdict", Tags.of("verdict", "pass"), s -> s.passed);
    gauge("tally.cases", "Cases that ended, by verdict", Tags.of("verdict", "fail"), s -> s.failed);
    gauge("tally.cases", "Cases that ended, by verdict", Tags.of("verdict", "error"), s -> s.errored);
    gauge("tally.redeliveries", "Attempts that put their case back in the queue", Tags.empty(), s -> s.redeliveries);
    gauge("tally.workers", "Workers by state", Tags.of("state", "live"), s -> s.live);
    gauge("tally.workers", "Workers by state", Tags.of("state", "left"), s -> s.left);
    gauge("tally.worker.ejections", "Outlier ejections of the workers in the store", Tags.empty(), s -> s.ejections);
    // Which of the servers sharing a store leads (1) or stands by (0), and the epoch it last saw lead.
    Gauge.builder("tally.leading", coordinator, c -> c.leading() ? 1 : 0)
        .description("1 if this coordinator leads its store, 0 if it stands by").register(registry);
    Gauge.builder("tally.leader.epoch", coordinator, c -> c.leader() == null ? 0 : c.leader().epoch())
        .description("The store's leader epoch as this coordinator last saw it").register(registry);
    this.suspicion = MultiGauge.builder("tally.worker.suspicion")
        .description("Each live worker's failure-detector suspicion").register(registry);
  }

  private void gauge(String name, String description, Tags tags, ToDoubleFunction<Snapshot> value) {
    Gauge.builder(name, this, m -> value.applyAsDouble(m.snapshot)).description(description).tags(tags).register(registry);
  }

  /** {@code GET /metrics}: refreshes the store-wide figures and answers Prometheus' text format. */
  void scrape(Context ctx) {
    ctx.contentType("text/plain; version=0.0.4; charset=utf-8").result(scrape());
  }

  /** Refreshes the store-wide figures and renders every meter in Prometheus' text format. */
  public synchronized String scrape() {
    Snapshot s = Snapshot.of(store.runs(), store.workerStatuses());
    snapshot = s;
    List<MultiGauge.Row<?>> rows = new ArrayList<>();
    for (WorkerStatus w : s.liveWorkers) {
      if (!Double.isNaN(w.suspicionLevel())) { // the number itself, not parsed back out of its words
        rows.add(MultiGauge.Row.of(Tags.of("worker", w.name(), "id", w.workerId()), w.suspicionLevel()));
      }
    }
    suspicion.register(rows, true);
    return registry.scrape();
  }

  /** The store-wide figures of one scrape. */
  private record Snapshot(Map<RunState, Long> runsByState, long passed, long failed, long errored,
      long redeliveries, long live, long left, long ejections, List<WorkerStatus> liveWorkers) {
    static final Snapshot EMPTY = new Snapshot(Map.of(), 0, 0, 0, 0, 0, 0, 0, List.of());

    static Snapshot of(List<RunView> runs, List<WorkerStatus> workers) {
      Map<RunState, Long> byState = new EnumMap<>(RunState.class);
      long passed = 0, failed = 0, errored = 0, redeliveries = 0;
      for (RunView r : runs) {
        RunCounters c = r.counters();
        byState.merge(r.state(), 1L, Long::sum);
        passed += c.passed();
        failed += c.failed();
        errored += dev.tally.coordinator.report.RunReport.errored(c);
        redeliveries += c.redeliveries();
      }
      List<WorkerStatus> live = workers.stream().filter(WorkerStatus::connected).toList();
      long ejections = workers.stream().mapToLong(WorkerStatus::timesEjected).sum();
      return new Snapshot(Map.copyOf(byState), passed, failed, errored, redeliveries,
          live.size(), workers.size() - live.size(), ejections, live);
    }

    double runs(RunState state) {
      return runsByState.getOrDefault(state, 0L);
    }
  }
}
