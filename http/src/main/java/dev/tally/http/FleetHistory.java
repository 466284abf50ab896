package dev.tally.http;

import dev.tally.core.store.Store;
import dev.tally.core.store.WorkerStatus;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet's recent past, for the dashboard's workers page: each live worker's suspicion over the last
 * {@link #KEEP_MILLIS}, and the fleet's changes as they were seen (a worker joined, left with why, began
 * or ended a drain, was ejected as an outlier with the reason, was readmitted).
 *
 * <p><b>How.</b> It reads the worker reports the coordinator saves every two seconds ({@link
 * Store#workerStatuses()}, the store's read side) once per {@link #SAMPLE_MILLIS}, keeps each live
 * worker's suspicion level, and compares each report with the one before it to find the changes. A
 * change between two reads is seen at the second read, so the times it gives are within one sample of
 * the coordinator's. It lives in memory: a restarted server starts a new history (the store keeps each
 * worker's last report, and {@code GET /workers} shows it).
 *
 * <p><b>Limits.</b> At most {@link #MAX_WORKERS} workers are charted (the most recently seen) and
 * {@link #MAX_EVENTS} changes kept, so a fleet of thousands costs a bounded few megabytes.
 *
 * <p>Thread-safety: sampled on its own thread; the readers ({@link #suspicion}, {@link #events}) may be
 * called from any thread and get copies.
 */
final class FleetHistory implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(FleetHistory.class);

  /** How often the reports are read: the coordinator saves them every 2 s, so 1 s misses none. */
  static final long SAMPLE_MILLIS = 1_000;
  /** How far back the suspicion charts go: ten minutes, the dashboard's "last minutes". */
  static final long KEEP_MILLIS = 10 * 60_000;
  /** The most workers charted at once. */
  static final int MAX_WORKERS = 1_000;
  /** The most fleet changes kept. */
  static final int MAX_EVENTS = 1_000;

  /** One point of a worker's suspicion chart. */
  record Sample(long atMillis, double level) {}

  /**
   * A change of the fleet.
   *
   * @param seq its number, increasing: a client asks for what came after the last it saw
   * @param atMillis when it was seen, epoch ms
   * @param kind {@code joined}, {@code left}, {@code draining}, {@code accepting}, {@code ejected}
   * @param workerId the worker
   * @param name its name
   * @param detail why (the reason it left or was ejected), or null
   */
  record Change(long seq, long atMillis, String kind, String workerId, String name, String detail) {}

  private final Store store;
  private final LongSupplier clockMillis;
  private final Object lock = new Object();
  private final Map<String, Deque<Sample>> samples = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<String, String> names = new HashMap<>();
  private final Deque<Change> changes = new ArrayDeque<>();
  private Map<String, WorkerStatus> last = Map.of();
  private long seq;
  /** When a failed read was last logged; sampler thread only. */
  private long lastFailureLoggedMillis = Long.MIN_VALUE / 2;
  private boolean sampled;
  private final ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "tally-api-fleet-history");
    t.setDaemon(true);
    return t;
  });

  FleetHistory(Store store, LongSupplier clockMillis) {
    this.store = Objects.requireNonNull(store, "store");
    this.clockMillis = Objects.requireNonNull(clockMillis, "clockMillis");
  }

  void start() {
    sampler.scheduleWithFixedDelay(() -> {
      try {
        sample(store.workerStatuses(), clockMillis.getAsLong());
      } catch (Throwable e) { // whatever it is: an executor's task that throws is never run again
        long now = clockMillis.getAsLong();
        if (now - lastFailureLoggedMillis >= 60_000) { // said once a minute, not every second
          lastFailureLoggedMillis = now;
          log.warn("fleet history: cannot read the worker reports (the workers page misses changes until it can): {}",
              e.toString());
        }
      }
    }, 0, SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** Takes one read of the reports, seen at {@code nowMillis}. Package-private for tests. */
  void sample(List<WorkerStatus> statuses, long nowMillis) {
    synchronized (lock) {
      Map<String, WorkerStatus> now = new HashMap<>();
      for (WorkerStatus w : statuses) {
        now.put(w.workerId(), w);
        WorkerStatus before = last.get(w.workerId());
        compare(before, w, nowMillis, sampled);
        if (w.connected()) {
          names.put(w.workerId(), w.name());
          if (!Double.isNaN(w.suspicionLevel())) {
            Deque<Sample> points = samples.computeIfAbsent(w.workerId(), k -> new ArrayDeque<>());
            if (points.isEmpty() || points.peekLast().atMillis() < w.reportedAtMillis()) {
              points.addLast(new Sample(w.reportedAtMillis(), w.suspicionLevel()));
            }
          }
        }
      }
      long oldest = nowMillis - KEEP_MILLIS;
      samples.values().forEach(d -> {
        while (!d.isEmpty() && d.peekFirst().atMillis() < oldest) {
          d.removeFirst();
        }
      });
      samples.values().removeIf(Deque::isEmpty);
      while (samples.size() > MAX_WORKERS) {
        samples.remove(samples.keySet().iterator().next()); // the least recently touched
      }
      last = now;
      sampled = true;
    }
  }

  /** The changes from {@code before} to {@code now}; a first read reports only what is new since the server started. */
  private void compare(WorkerStatus before, WorkerStatus now, long atMillis, boolean seenBefore) {
    if (before == null) {
      if (seenBefore) {
        // A worker that joined and left between two reads (a short one, or one reaped at once) is shown
        // leaving: the page's changes never miss a departure.
        add(atMillis, now.connected() ? "joined" : "left", now, now.leftReason());
      }
      return;
    }
    if (before.connected() && !now.connected()) {
      add(atMillis, "left", now, now.leftReason());
      return;
    }
    if (!before.connected() && now.connected()) {
      add(atMillis, "joined", now, null);
      return;
    }
    if (!now.connected()) {
      return;
    }
    if (before.acceptingWork() && !now.acceptingWork()) {
      add(atMillis, "draining", now, now.suspicion().isEmpty() ? null : "suspicion " + now.suspicion());
    } else if (!before.acceptingWork() && now.acceptingWork()) {
      add(atMillis, "accepting", now, null);
    }
    if (now.timesEjected() > before.timesEjected()) {
      add(atMillis, "ejected", now, now.ejectionReason());
    }
  }

  private void add(long atMillis, String kind, WorkerStatus w, String detail) {
    changes.addLast(new Change(++seq, atMillis, kind, w.workerId(), w.name(), detail));
    while (changes.size() > MAX_EVENTS) {
      changes.removeFirst();
    }
  }

  /** Each charted worker's samples since {@code sinceMillis}, oldest first, by worker id. */
  Map<String, List<Sample>> suspicion(long sinceMillis) {
    synchronized (lock) {
      Map<String, List<Sample>> out = new LinkedHashMap<>();
      samples.forEach((id, points) -> {
        List<Sample> recent = new ArrayList<>();
        for (Sample s : points) {
          if (s.atMillis() >= sinceMillis) {
            recent.add(s);
          }
        }
        if (!recent.isEmpty()) {
          out.put(id, recent);
        }
      });
      return out;
    }
  }

  /** A worker's name as last seen, or its id. */
  String name(String workerId) {
    synchronized (lock) {
      return names.getOrDefault(workerId, workerId);
    }
  }

  /** The changes after {@code afterSeq}, oldest first. */
  List<Change> events(long afterSeq) {
    synchronized (lock) {
      List<Change> out = new ArrayList<>();
      for (Change c : changes) {
        if (c.seq() > afterSeq) {
          out.add(c);
        }
      }
      return out;
    }
  }

  @Override
  public void close() {
    sampler.shutdownNow();
  }
}
