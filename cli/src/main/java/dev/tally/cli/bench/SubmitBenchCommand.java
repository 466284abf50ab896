package dev.tally.cli.bench;

import dev.tally.cli.CoordinatorOptions;
import dev.tally.cli.Main;
import dev.tally.cli.ProductDefaults;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.http.ApiServer;
import dev.tally.http.TallyServer;
import dev.tally.worker.LocalWorker;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code tally bench-submit}: how many runs a second the HTTP API takes, each a {@code POST /api/v1/runs}
 * of {@code --cases} noop cases with its own {@code Idempotency-Key}, from {@code --clients} concurrent
 * clients over loopback; and what a replay costs (the same key and body again, answered from the stored
 * response with {@code Idempotent-Replayed: true}). The server is a {@link TallyServer} in this process on a
 * fresh SQLite store, with an in-process worker running the submitted cases meanwhile, so the submissions
 * compete with the scheduler's commits as they would on a live server. Prints the machine and the
 * settings with the figures.
 */
@Command(name = "bench-submit", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = "Measure run submissions per second through the HTTP API (with idempotency keys) and the cost of a replay.")
public final class SubmitBenchCommand implements Callable<Integer> {
  @Option(names = "--submissions", defaultValue = "500", description = "Runs to submit in the measured phase (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int submissions;

  @Option(names = "--cases", defaultValue = "100", description = "Cases per run (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int cases;

  @Option(names = "--clients", defaultValue = "4", description = "Concurrent clients (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int clients;

  @Option(names = "--in-process", defaultValue = "4", description = "Slots of the in-process worker that runs the submitted cases; 0 runs none (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int slots;

  @Mixin CoordinatorOptions coordinatorOptions;

  /** Submissions before the measured phase, so the measured one sees compiled code and warm connections. */
  static final int WARMUP_SUBMISSIONS = 50;

  @Override
  public Integer call() throws Exception {
    PrintStream out = System.out;
    if (submissions < 1 || cases < 1 || clients < 1 || slots < 0) {
      System.err.println("tally bench-submit: --submissions, --cases and --clients must be >= 1, --in-process >= 0");
      return Main.EXIT_USAGE;
    }
    Path dir = Files.createTempDirectory("tally-bench-submit");
    CoordinatorBuilder builder = coordinatorOptions.applyTo(Coordinator.builder()).storeFile(dir.resolve("bench.db"));
    ApiServer.Settings api = ApiServer.Settings.builder().bind("127.0.0.1", 0).spoolDirectory(dir.resolve("uploads")).build();
    try (TallyServer server = TallyServer.start(builder, api)) {
      LocalWorker worker = slots > 0 ? LocalWorker.start("in-process", slots, slots, server.coordinator().scheduler(), server.coordinator().store().storeId()) : null;
      try {
        return measure(server, out);
      } finally {
        if (worker != null) {
          worker.close("bench over");
        }
      }
    } finally {
      deleteTree(dir);
    }
  }

  private int measure(TallyServer server, PrintStream out) throws Exception {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    URI runs = URI.create(server.api().url() + ApiServer.BASE + "/runs");
    phase(http, runs, WARMUP_SUBMISSIONS, "warmup");
    Phase first = phase(http, runs, submissions, "measured");
    Phase replay = replay(http, runs, first);
    out.printf("tally bench-submit: %d cores, %s %s, %s %s; java %s%n", Runtime.getRuntime().availableProcessors(),
        System.getProperty("os.name"), System.getProperty("os.arch"), System.getProperty("java.vm.name"),
        System.getProperty("java.vm.version"), System.getProperty("java.version"));
    out.printf("settings: --submissions %d --cases %d --clients %d --in-process %d, JSON bodies over loopback HTTP/1.1, SQLite WAL synchronous=NORMAL%n",
        submissions, cases, clients, slots);
    out.printf("first submissions: %d in %d ms: %.0f runs/s (%.0f cases/s); latency p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
        first.ok, first.millis, first.ok * 1000.0 / Math.max(1, first.millis), first.ok * (double) cases * 1000.0 / Math.max(1, first.millis),
        first.percentile(50), first.percentile(99), first.percentile(100));
    out.printf("replays (same key and body): %d in %d ms: %.0f/s; latency p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
        replay.ok, replay.millis, replay.ok * 1000.0 / Math.max(1, replay.millis), replay.percentile(50), replay.percentile(99),
        replay.percentile(100));
    long runsInStore = server.coordinator().store().runs().size();
    boolean exact = first.ok == submissions && replay.ok == submissions && runsInStore == WARMUP_SUBMISSIONS + submissions;
    out.printf("runs in the store: %d (warm-up %d + measured %d)%s%n", runsInStore, WARMUP_SUBMISSIONS, submissions,
        exact ? "" : "  <-- NOT EXACT: a submission failed or a replay made a run");
    return exact ? Main.EXIT_PASSED : Main.EXIT_FAILED;
  }

  /** What one phase did: successes, its wall time, and each request's latency. */
  private record Phase(int ok, long millis, double[] latenciesMillis, List<Submitted> submitted) {
    double percentile(int p) {
      if (latenciesMillis.length == 0) {
        return 0;
      }
      double[] sorted = latenciesMillis.clone();
      Arrays.sort(sorted);
      int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
      return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }
  }

  private record Submitted(String key, byte[] body) {}

  private Phase phase(HttpClient http, URI runs, int n, String name) throws Exception {
    List<Submitted> bodies = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      StringBuilder body = new StringBuilder("{\"name\":\"").append(name).append('-').append(i)
          .append("\",\"evaluator\":{\"kind\":\"noop\"},\"cases\":[");
      for (int c = 0; c < cases; c++) {
        body.append(c == 0 ? "" : ",").append("{\"id\":\"c").append(c).append("\"}");
      }
      bodies.add(new Submitted(UUID.randomUUID().toString(), body.append("]}").toString().getBytes(StandardCharsets.UTF_8)));
    }
    return send(http, runs, bodies, 201, false);
  }

  private Phase replay(HttpClient http, URI runs, Phase first) throws Exception {
    return send(http, runs, first.submitted(), 201, true);
  }

  private Phase send(HttpClient http, URI runs, List<Submitted> bodies, int expected, boolean replay) throws Exception {
    double[] latencies = new double[bodies.size()];
    AtomicInteger next = new AtomicInteger();
    AtomicInteger ok = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    long t0 = System.nanoTime();
    try {
      List<Future<?>> running = new ArrayList<>();
      for (int c = 0; c < clients; c++) {
        running.add(pool.submit(() -> {
          for (int i; (i = next.getAndIncrement()) < bodies.size(); ) {
            Submitted s = bodies.get(i);
            HttpRequest request = HttpRequest.newBuilder(runs).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").header("Idempotency-Key", "\"" + s.key() + "\"")
                .POST(HttpRequest.BodyPublishers.ofByteArray(s.body())).build();
            long start = System.nanoTime();
            HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
            latencies[i] = (System.nanoTime() - start) / 1e6;
            boolean replayed = r.headers().firstValue("Idempotent-Replayed").map("true"::equals).orElse(false);
            if (r.statusCode() == expected && replayed == replay) {
              ok.incrementAndGet();
            } else {
              System.err.println("tally bench-submit: unexpected answer " + r.statusCode() + (replayed ? " (replayed)" : "") + ": " + r.body());
            }
          }
          return null;
        }));
      }
      for (Future<?> f : running) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    long millis = (System.nanoTime() - t0) / 1_000_000;
    return new Phase(ok.get(), millis, latencies, bodies);
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (java.io.IOException e) {
      System.err.println("tally bench-submit: could not delete " + dir + ": " + e.getMessage());
    }
  }
}
