package dev.tally.cli.bench;

import dev.tally.cli.DurationConverter;
import dev.tally.cli.ProductDefaults;
import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.FailureDetector;
import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.core.detect.MissedHeartbeatsDetector;
import dev.tally.core.detect.PhiAccrualDetector;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.function.LongFunction;
import java.util.function.LongPredicate;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tally bench-detectors}: the detection quality of each failure detector and setting, measured by
 * replaying simulated heartbeat traces that each end in a real stop.
 *
 * <p>The metrics are Chen, Toueg and Aguilera's ("On the Quality of Service of Failure Detectors", IEEE
 * Transactions on Computers 51(5), 2002):
 *
 * <ul>
 *   <li><b>T<sub>D</sub></b>, detection time: from the real stop to the conviction (and, separately, to
 *       the drain). It is the detector's own time; the worker server's reaper looks for convicted
 *       connections at most {@link WorkerServer.Settings#MAX_REAP_CHECK_PERIOD} apart, so a real reap
 *       comes up to that much later (what {@code tally bench-failover} measures end to end).
 *   <li><b>λ<sub>M</sub></b>, mistake rate: convictions of a live sender, per hour. After one the
 *       detector is replaced at the sender's next frame, as the worker's reconnect would.
 *   <li><b>T<sub>M</sub></b>, mistake duration: from a false conviction to the sender's next frame.
 * </ul>
 *
 * Also: drains per hour and the share of live time spent drained (the worker got no new jobs), and the
 * highest suspicion a live sender reached (in the detector's units), which bounds a drain level that
 * would never idle it.
 *
 * <p>Traces are generated from one seeded {@link Random} (a run's seed is {@code --seed} plus its
 * index), so a result replays exactly. Each run is {@code --hours} of simulated time with a heartbeat
 * every {@code --heartbeat-interval} (by default the product's, {@link
 * dev.tally.core.detect.DetectorSettings#DEFAULT_HEARTBEAT_INTERVAL}), then a stop at a uniformly random
 * point of the next interval. Pure computation: no clock,
 * no threads, no sleeping.
 */
@Command(name = "bench-detectors", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = "Measure failure detectors' detection time and false reaps on simulated heartbeat traces.")
public final class DetectorBenchCommand implements Callable<Integer> {
  private static final long MS = 1_000_000L;
  private static final long SECOND = 1_000 * MS;
  private static final long HOUR = 3_600 * SECOND;

  /**
   * The longest heartbeat interval the bench replays: the traces' pauses and delays are seconds long, so
   * beyond this the traces no longer describe a link a worker would be judged on.
   */
  private static final Duration MAX_HEARTBEAT_INTERVAL = Duration.ofSeconds(10);

  /** Where the search for a conviction after the stop gives up: a detector that waits a day is broken. */
  private static final long MAX_DETECTION_NANOS = 24 * HOUR;

  @Option(names = "--seed", defaultValue = "20240601", description = "Seed of the first run (default: ${DEFAULT-VALUE}).", paramLabel = "SEED")
  long seed;

  @Option(names = "--runs", defaultValue = "100", description = "Runs per trace, each a fresh seed (default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int runs;

  @Option(names = "--heartbeat-interval", converter = DurationConverter.class,
      description = "The senders' heartbeat interval, which the missed-heartbeat and phi settings are built for (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
  Duration heartbeatInterval;

  @Option(names = "--hours", defaultValue = "1", description = "Simulated hours per run before the stop (default: ${DEFAULT-VALUE}).", paramLabel = "NUMBER")
  double hours;

  /** Runs the benchmark through picocli, for use without the {@code tally} launcher. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new DetectorBenchCommand()).execute(args));
  }

  @Override
  public Integer call() {
    if (heartbeatInterval == null) { // run without a default provider
      heartbeatInterval = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;
    }
    Duration minInterval = WorkerServer.Settings.MIN_HEARTBEAT_INTERVAL;
    if (runs < 1 || !(hours > 0) || hours > 1_000 || heartbeatInterval.compareTo(minInterval) < 0
        || heartbeatInterval.compareTo(MAX_HEARTBEAT_INTERVAL) > 0) {
      System.err.println("tally bench-detectors: --runs must be >= 1, --hours in (0, 1000] and --heartbeat-interval in ["
          + minInterval.toMillis() + "ms, " + MAX_HEARTBEAT_INTERVAL.toSeconds() + "s]");
      return 2;
    }
    PrintStream out = System.out;
    long started = System.nanoTime();
    long interval = heartbeatInterval.toNanos();
    long duration = (long) (hours * HOUR);
    List<Trace> traces = traces(interval);
    List<Setting> settings = settings(interval);

    out.printf("tally bench-detectors: %d cores, %s %s; %s %s; java %s%n",
        Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"), System.getProperty("os.arch"),
        System.getProperty("java.vm.name"), System.getProperty("java.vm.version"), System.getProperty("java.version"));
    out.printf("command: tally bench-detectors --seed %d --runs %d --hours %s --heartbeat-interval %dms%n", seed, runs, fmtNum(hours), interval / MS);
    out.printf("each trace: %d runs x %s h, heartbeat every %d ms, network delay 0.2 ms + Exp(0.3 ms), then a stop%n",
        runs, fmtNum(hours), interval / MS);
    out.printf("T_D: stop -> conviction (detector time; the reaper adds <= %d ms); T_D drain: stop -> drain;%n",
        WorkerServer.Settings.MAX_REAP_CHECK_PERIOD.toMillis());
    out.println("mistakes/h: convictions of a live sender (Chen-Toueg-Aguilera lambda_M); T_M: false conviction -> next frame;");
    out.println("drains/h, drained%: live-sender drains and share of live time drained; peak: highest suspicion of a live sender");
    out.println();
    out.println("settings (window: silence that convicts on a steady link):");
    for (Setting s : settings) {
      out.printf("  %-8s %-7s %s%n", s.id, fmtSec(s.windowNanos), s.factory.apply(0).describe());
    }

    Stats[][] all = new Stats[traces.size()][settings.size()];
    for (int ti = 0; ti < traces.size(); ti++) {
      Trace trace = traces.get(ti);
      for (int si = 0; si < settings.size(); si++) {
        all[ti][si] = new Stats();
      }
      for (int run = 0; run < runs; run++) {
        Random random = new Random(seed + run * 1_000_003L + ti);
        long stop = duration + (long) (random.nextDouble() * interval);
        long[] arrivals = trace.generator.generate(random, interval, stop);
        for (int si = 0; si < settings.size(); si++) {
          replay(arrivals, stop, settings.get(si).factory, all[ti][si]);
        }
      }
      out.println();
      out.printf("trace %s: %s%n", trace.name, trace.description);
      out.printf("  %-8s %8s %8s %8s %11s %8s %9s %9s %8s%n",
          "set", "T_D mean", "T_D max", "drain", "mistakes/h", "T_M", "drains/h", "drained%", "peak");
      for (int si = 0; si < settings.size(); si++) {
        Stats st = all[ti][si];
        double aliveHours = st.aliveNanos / (double) HOUR;
        out.printf("  %-8s %8s %8s %8s %11.2f %8s %9.2f %9.3f %8.2f%n",
            settings.get(si).id, fmtSec(mean(st.detection)), fmtSec(max(st.detection)), fmtSec(mean(st.drainDetection)),
            st.mistakes / aliveHours, st.mistakes == 0 ? "-" : fmtSec(st.mistakeNanos / (double) st.mistakes),
            st.drains / aliveHours, 100.0 * st.drainedNanos / st.aliveNanos, st.peakAlive);
      }
    }

    out.println();
    out.println("summary: mistakes/h per trace, and T_D mean over all runs of all traces");
    StringBuilder head = new StringBuilder(String.format("  %-8s", "set"));
    for (Trace t : traces) {
      head.append(String.format(" %9s", t.name));
    }
    out.println(head.append(String.format(" %9s %9s", "T_D mean", "T_D max")));
    for (int si = 0; si < settings.size(); si++) {
      StringBuilder row = new StringBuilder(String.format("  %-8s", settings.get(si).id));
      List<Long> detections = new ArrayList<>();
      for (int ti = 0; ti < traces.size(); ti++) {
        Stats st = all[ti][si];
        row.append(String.format(" %9.2f", st.mistakes / (st.aliveNanos / (double) HOUR)));
        detections.addAll(st.detection);
      }
      out.println(row.append(String.format(" %9s %9s", fmtSec(mean(detections)), fmtSec(max(detections)))));
    }
    out.printf("%n%.1f s of CPU-bound replay%n", (System.nanoTime() - started) / 1e9);
    return 0;
  }

  /**
   * Replays one trace through a fresh detector from time 0: every gap between frames is checked for a
   * drain and a conviction (suspicion grows monotonically with silence, so checking just before the next
   * frame and then bisecting finds the first moment exactly); a conviction of the live sender is a
   * mistake, after which a new detector starts at the next frame. After the last frame comes the stop.
   */
  static void replay(long[] arrivals, long stop, LongFunction<FailureDetector> factory, Stats st) {
    FailureDetector d = factory.apply(0);
    long last = 0;
    for (long a : arrivals) {
      if (a <= last) {
        continue; // a frame delivered in the same instant as the previous one adds no information here
      }
      long end = a - 1;
      FailureDetector det = d;
      if (det.draining(end)) {
        long drainAt = firstTrue(det::draining, last, end);
        st.drains++;
        if (det.convicted(end)) {
          long convictAt = firstTrue(det::convicted, last, end);
          st.mistakes++;
          st.mistakeNanos += a - convictAt;
          st.drainedNanos += convictAt - drainAt;
          st.peakAlive = Math.max(st.peakAlive, det.suspicion(end));
          d = factory.apply(a); // the worker reconnects; its next frame opens the new connection
          last = a;
          continue;
        }
        st.drainedNanos += a - drainAt;
      }
      st.peakAlive = Math.max(st.peakAlive, det.suspicion(end));
      det.heartbeat(a);
      last = a;
    }
    st.aliveNanos += stop;
    FailureDetector det = d;
    if (det.convicted(stop)) { // convicted in the last gap before the stop: still a live sender
      long convictAt = firstTrue(det::convicted, last, stop);
      st.mistakes++;
      st.mistakeNanos += stop - convictAt;
      st.detection.add(0L);
      st.drainDetection.add(0L);
      return;
    }
    st.detection.add(firstAfter(det::convicted, stop) - stop);
    st.drainDetection.add(det.draining(stop) ? 0L : firstAfter(det::draining, stop) - stop);
  }

  /** The least t in (lo, hi] with p(t), given p(hi) and p monotone in t. */
  private static long firstTrue(LongPredicate p, long lo, long hi) {
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      if (p.test(mid)) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi;
  }

  /** The least t > from with p(t), p monotone; from + {@link #MAX_DETECTION_NANOS} if none by then. */
  private static long firstAfter(LongPredicate p, long from) {
    long lo = from;
    long step = MS;
    while (!p.test(from + step)) {
      lo = from + step;
      if (step >= MAX_DETECTION_NANOS) {
        return from + MAX_DETECTION_NANOS;
      }
      step *= 2;
    }
    return firstTrue(p, lo, from + step);
  }

  // ------------------------------------------------------------------ settings

  record Setting(String id, long windowNanos, LongFunction<FailureDetector> factory) {}

  static List<Setting> settings(long interval) {
    List<Setting> s = new ArrayList<>();
    s.add(fixed("F5", 5 * SECOND, 3 * SECOND));
    s.add(fixed("F3", 3 * SECOND, 2 * SECOND));
    s.add(missed("M10", interval, 10, 6));
    s.add(missed("M5", interval, 5, 3));
    s.add(missed("M4", interval, 4, 3));
    s.add(phi("P8/.5", interval, 8, 1, 500));
    s.add(phi("P8/1", interval, 8, 1, 1000));
    s.add(phi("P8/1.5", interval, 8, 1, 1500));
    s.add(phi("P8/2", interval, 8, 1, 2000));
    s.add(phi("P10/1.5", interval, 10, 1, 1500));
    s.add(phi("P12/1", interval, 12, 1, 1000));
    s.add(phi("P12/1.5", interval, 12, 1, 1500));
    // Pekko's history, unfloored: a 1 ms "interval" floors nothing (and seeds 1 ms, forgotten after 100 frames).
    s.add(phi("P8/1.5nf", MS, 8, 1, 1500));
    return s;
  }

  private static Setting fixed(String id, long window, long drain) {
    Duration w = Duration.ofNanos(window);
    Duration dr = Duration.ofNanos(drain);
    return new Setting(id, window, start -> new FixedTimeoutDetector(w, dr, start));
  }

  private static Setting missed(String id, long interval, int convict, double drain) {
    MissedHeartbeatsDetector.Config c = MissedHeartbeatsDetector.builder()
        .heartbeatInterval(Duration.ofNanos(interval)).convictAfterMissed(convict).drainAfterMissed(drain).build();
    return new Setting(id, c.detectionWindow().toNanos(), c::newDetector);
  }

  private static Setting phi(String id, long interval, double threshold, double drain, long pauseMillis) {
    PhiAccrualDetector.Config c = PhiAccrualDetector.builder()
        .heartbeatInterval(Duration.ofNanos(interval)).threshold(threshold).drainLevel(drain)
        .acceptableHeartbeatPause(Duration.ofMillis(pauseMillis)).build();
    return new Setting(id, c.detectionWindow().toNanos(), c::newDetector);
  }

  // ------------------------------------------------------------------ traces

  /** Makes the arrival times (sorted, all before {@code stop}) of one run from {@code random}. */
  @FunctionalInterface
  interface Generator {
    long[] generate(Random random, long interval, long stop);
  }

  record Trace(String name, String description, Generator generator) {}

  static List<Trace> traces(long interval) {
    List<Trace> t = new ArrayList<>();
    t.add(new Trace("steady", "a heartbeat every interval",
        (r, i, stop) -> deliver(r, fixedRate(i, stop), stop)));
    t.add(new Trace("jitter", "each interval uniform in [0.8, 1.2] x the interval",
        (r, i, stop) -> deliver(r, stretched(r, i, stop, 0.8, 1.2, 0, 0, 0), stop)));
    t.add(new Trace("gc2", "GC pauses uniform in [0.5, 2.0] s, Exp(30 s) apart, freezing the sender's fixed-rate schedule",
        (r, i, stop) -> deliver(r, paused(r, fixedRate(i, stop), stop, 30 * SECOND, 500 * MS, 2000 * MS), stop)));
    t.add(new Trace("gc1.5", "GC pauses uniform in [0.5, 1.5] s, Exp(30 s) apart (the target: no false reap)",
        (r, i, stop) -> deliver(r, paused(r, fixedRate(i, stop), stop, 30 * SECOND, 500 * MS, 1500 * MS), stop)));
    t.add(new Trace("loss", "each heartbeat lost with probability 1%",
        (r, i, stop) -> deliver(r, lossy(r, fixedRate(i, stop), 0.01), stop)));
    t.add(new Trace("slow", "CPU-starved bursts, Exp(5 min) apart, of U(10, 60) s with intervals U(1.5, 3.0) x",
        (r, i, stop) -> deliver(r, stretched(r, i, stop, 1.0, 1.0, 300 * SECOND, 1.5, 3.0), stop)));
    t.add(new Trace("busy", "heartbeats plus, in busy phases (Exp(60 s) busy / Exp(60 s) idle), results Exp(100 ms) apart; GC pauses as gc1.5",
        (r, i, stop) -> deliver(r, paused(r, busy(r, i, stop), stop, 30 * SECOND, 500 * MS, 1500 * MS), stop)));
    return t;
  }

  private static long[] fixedRate(long interval, long stop) {
    long[] sends = new long[(int) ((stop - 1) / interval)];
    for (int k = 0; k < sends.length; k++) {
      sends[k] = (k + 1) * interval;
    }
    return sends;
  }

  /**
   * Sends whose intervals are the interval times U(lo, hi), except in bursts (Exp({@code burstMean})
   * apart, U(10, 60) s long; none if {@code burstMean} is 0) where they are times U(burstLo, burstHi).
   */
  private static long[] stretched(Random r, long interval, long stop, double lo, double hi,
      long burstMean, double burstLo, double burstHi) {
    LongList sends = new LongList();
    long nextBurst = burstMean == 0 ? Long.MAX_VALUE : exp(r, burstMean);
    long burstEnd = -1;
    long t = 0;
    while (true) {
      if (t >= nextBurst) {
        burstEnd = t + uniform(r, 10 * SECOND, 60 * SECOND);
        nextBurst = burstEnd + exp(r, burstMean);
      }
      double factor = t < burstEnd ? burstLo + r.nextDouble() * (burstHi - burstLo) : lo + r.nextDouble() * (hi - lo);
      t += (long) (interval * factor);
      if (t >= stop) {
        return sends.toArray();
      }
      sends.add(t);
    }
  }

  /** Freezes the sender during pauses: a send due inside one happens when it ends. */
  private static long[] paused(Random r, long[] sends, long stop, long meanGap, long minPause, long maxPause) {
    long[] out = sends.clone();
    long pauseStart = exp(r, meanGap);
    long pauseEnd = pauseStart + uniform(r, minPause, maxPause);
    for (int k = 0; k < out.length; k++) {
      while (out[k] >= pauseEnd) {
        pauseStart = pauseEnd + exp(r, meanGap);
        pauseEnd = pauseStart + uniform(r, minPause, maxPause);
      }
      if (out[k] >= pauseStart) {
        out[k] = pauseEnd;
      }
    }
    return Arrays.stream(out).filter(s -> s < stop).toArray();
  }

  private static long[] lossy(Random r, long[] sends, double p) {
    return Arrays.stream(sends).filter(s -> r.nextDouble() >= p).toArray();
  }

  private static long[] busy(Random r, long interval, long stop) {
    LongList sends = new LongList();
    for (long s : fixedRate(interval, stop)) {
      sends.add(s);
    }
    long t = exp(r, 60 * SECOND); // idle first
    while (t < stop) {
      long busyEnd = t + exp(r, 60 * SECOND);
      while ((t += exp(r, 100 * MS)) < Math.min(busyEnd, stop)) {
        sends.add(t);
      }
      t = busyEnd + exp(r, 60 * SECOND);
    }
    long[] all = sends.toArray();
    Arrays.sort(all);
    return all;
  }

  /** Adds a network delay of 0.2 ms + Exp(0.3 ms) to each send, keeping TCP's order; drops the ones after the stop. */
  private static long[] deliver(Random r, long[] sends, long stop) {
    LongList arrivals = new LongList();
    long previous = 0;
    for (long s : sends) {
      long a = Math.max(previous, s + 200_000 + exp(r, 300_000));
      if (s >= stop) {
        break;
      }
      arrivals.add(a);
      previous = a;
    }
    return arrivals.toArray();
  }

  private static long exp(Random r, long mean) {
    return (long) (-mean * Math.log(1 - r.nextDouble()));
  }

  private static long uniform(Random r, long lo, long hi) {
    return lo + (long) (r.nextDouble() * (hi - lo));
  }

  // ------------------------------------------------------------------ bookkeeping

  /** The totals of one setting on one trace, over all runs. */
  static final class Stats {
    final List<Long> detection = new ArrayList<>();
    final List<Long> drainDetection = new ArrayList<>();
    long mistakes;
    long mistakeNanos;
    long drains;
    long drainedNanos;
    long aliveNanos;
    double peakAlive;
  }

  private static final class LongList {
    private long[] a = new long[1024];
    private int n;

    void add(long v) {
      if (n == a.length) {
        a = Arrays.copyOf(a, n * 2);
      }
      a[n++] = v;
    }

    long[] toArray() {
      return Arrays.copyOf(a, n);
    }
  }

  private static double mean(List<Long> xs) {
    return xs.stream().mapToLong(Long::longValue).average().orElse(Double.NaN);
  }

  private static double max(List<Long> xs) {
    return xs.stream().mapToLong(Long::longValue).max().orElse(0);
  }

  private static String fmtSec(double nanos) {
    return Double.isNaN(nanos) ? "-" : String.format("%.2fs", nanos / SECOND);
  }

  private static String fmtNum(double d) {
    return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
  }
}
