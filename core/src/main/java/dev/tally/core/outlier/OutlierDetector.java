package dev.tally.core.outlier;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Finds workers that are alive but bad, from how their attempts end, and ejects them for a while: the
 * gray-failure half of DESIGN.md section 4. A worker can heartbeat perfectly and still fail every eval (a
 * broken model endpoint, a full disk) or crawl through them; the failure detectors cannot see that, the
 * traffic can.
 *
 * <p><b>What it does.</b> It is told when workers join and leave and how each attempt ended
 * ({@link Ending}: the case's verdict is never held against the worker). A worker is ejected when one of
 * three rules finds it bad: too many infrastructure failures in a row, an infrastructure-failure rate far
 * above the rest of the fleet's, or a median duration far above the rest of the fleet's for the same case
 * kind. The rules, their thresholds and why those defaults are in {@link OutlierPolicy}. An ejected worker
 * gets no new jobs (the scheduler asks {@link #isEjected}); it keeps its connection and finishes what it
 * has. The {@code k}-th ejection lasts {@code min(base * k, max)}, and never more than a set share of the
 * fleet is out at once. When its time is up the worker is back in service without anybody saying so, with
 * its failure count and windows cleared, so it is judged afresh on what it does next.
 *
 * <p><b>How to use it.</b>
 *
 * <pre>{@code
 * OutlierDetector outliers = new OutlierDetector(OutlierPolicy.defaults());
 * outliers.workerJoined("w1", now);
 * ...
 * if (!outliers.isEjected("w1", now)) { lease a job to w1 }
 * outliers.attemptEnded("w1", "run-7", Ending.SUCCESS, 80, now);   // a "fail" verdict is a SUCCESS here
 * outliers.attemptEnded("w1", "run-7", Ending.of(failure.kind()), 3, now);
 * for (OutlierEvent e : outliers.poll(now)) { log.warn(e.describe()); }
 * outliers.workerLeft("w1");
 * }</pre>
 *
 * <p><b>What it ignores.</b> {@link Ending#LOST} attempts; reports about workers it does not know (a
 * worker that left is forgotten, and a late report must not bring it back); reports that arrive while
 * the worker is ejected; and, after a return, reports of attempts that started before the ejection (the
 * scheduler starts none during one, so an attempt whose start, {@code nowMillis - durationMillis}, lies
 * before the middle of the last ejection is old news; the middle leaves half an ejection's room for the
 * difference between the worker's measured duration and the coordinator's clock).
 *
 * <p><b>Time.</b> It reads no clock: every method that needs the time takes {@code nowMillis}, a reading of
 * one millisecond clock the caller uses for every call (the scheduler's {@code Clock.millis()}), and
 * ejection ends are on that clock. Time never runs backwards here: an earlier reading than one already
 * seen is taken as the later one. A monotonic source is best; with a wall clock, a step forward ends
 * ejections early and a step back makes them last longer by the step.
 *
 * <p><b>Cost.</b> Memory is bounded: {@link OutlierPolicy#window()} entries per worker, and as many per
 * worker and case kind for at most {@value #MAX_TRACKED_KINDS} kinds; at most {@value #MAX_PENDING_EVENTS}
 * unpolled events. Each report costs O(workers) to compare rates, and a success of a kind with enough
 * samples sorts the other workers' samples of that kind (2,000 numbers for 100 workers).
 *
 * <p>Thread-safety: not thread-safe. One instance is owned by the scheduler's driver thread (the one that
 * calls {@code Scheduler.step()}) and touched only there.
 */
public final class OutlierDetector {
  /**
   * Case kinds whose latency history is kept; past it the kind reported least recently is forgotten.
   * Kinds are typically run ids, and a long-lived coordinator sees runs without end; 64 is far more than
   * run at once, and a forgotten kind only means its latency is learned again.
   */
  public static final int MAX_TRACKED_KINDS = 64;

  /**
   * Events kept until {@link #poll}; past it the oldest is dropped and counted in {@link #droppedEvents()}.
   * A scheduler that polls every step never comes near it; one that never polls must not grow without end.
   */
  public static final int MAX_PENDING_EVENTS = 1024;

  private final OutlierPolicy policy;
  // Iterated in join order, so that which of two equally bad workers is ejected first is reproducible.
  private final Map<String, WorkerState> workers = new LinkedHashMap<>();
  // Kind -> worker -> recent success durations. Access-ordered, so the first entry is the kind reported
  // least recently, the one to forget when there are too many.
  private final LinkedHashMap<String, Map<String, DurationWindow>> latencyByKind =
      new LinkedHashMap<>(16, 0.75f, true);
  private final ArrayDeque<OutlierEvent> events = new ArrayDeque<>();

  private long lastNowMillis = Long.MIN_VALUE;
  // The earliest end among current ejections, so that most calls skip the scan for returns.
  private long nextReturnMillis = Long.MAX_VALUE;
  private int ejectedCount;
  private long ejections;
  private long refusedEjections;
  private long droppedEvents;

  /**
   * Creates a detector with no workers.
   *
   * @throws NullPointerException if {@code policy} is null
   */
  public OutlierDetector(OutlierPolicy policy) {
    this.policy = Objects.requireNonNull(policy, "policy");
  }

  /**
   * A worker connected. Joining again under an id already known changes nothing (its history stays).
   *
   * @throws NullPointerException if {@code workerId} is null
   */
  public void workerJoined(String workerId, long nowMillis) {
    Objects.requireNonNull(workerId, "workerId");
    advance(nowMillis);
    workers.computeIfAbsent(workerId, id -> new WorkerState(id, policy.window()));
  }

  /**
   * A worker disconnected: everything about it is forgotten, its ejection and its count of ejections
   * included, and later reports about it are ignored. If it comes back it starts clean. Unknown ids are
   * ignored.
   *
   * @throws NullPointerException if {@code workerId} is null
   */
  public void workerLeft(String workerId) {
    Objects.requireNonNull(workerId, "workerId");
    WorkerState w = workers.remove(workerId);
    if (w == null) {
      return;
    }
    if (w.ejected) {
      ejectedCount--;
    }
    for (Map<String, DurationWindow> byWorker : latencyByKind.values()) {
      byWorker.remove(workerId);
    }
  }

  /**
   * An attempt on {@code workerId} ended; judge the worker on it, and eject it if a rule says so and the
   * share cap allows (see the class doc for the reports that are ignored).
   *
   * @param workerId the worker that ran it
   * @param caseKind which cases are alike in duration (a run id, say); only successes use it
   * @param ending how it ended for the worker; a case's {@code fail} verdict is a {@link Ending#SUCCESS}
   * @param durationMillis how long it ran, in ms
   * @param nowMillis the caller's clock, when the ending was learned
   * @throws NullPointerException if {@code workerId}, {@code caseKind} or {@code ending} is null
   * @throws IllegalArgumentException if {@code durationMillis < 0}
   */
  public void attemptEnded(String workerId, String caseKind, Ending ending, long durationMillis, long nowMillis) {
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(caseKind, "caseKind");
    Objects.requireNonNull(ending, "ending");
    if (durationMillis < 0) {
      throw new IllegalArgumentException("durationMillis must be >= 0, got " + durationMillis);
    }
    long now = advance(nowMillis);
    WorkerState w = workers.get(workerId);
    if (w == null || ending == Ending.LOST || w.ejected) {
      return;
    }
    // Saturating now - durationMillis: only an absurd duration reaches this, and it is certainly old news.
    long startMillis = now < Long.MIN_VALUE + durationMillis ? Long.MIN_VALUE : now - durationMillis;
    if (startMillis < w.staleBeforeMillis) {
      return;
    }
    Finding finding;
    if (ending == Ending.INFRA_FAILURE) {
      w.consecutiveFailures++;
      w.attempts.add(true);
      finding = judgeConsecutive(w);
      if (finding == null) {
        finding = judgeRate(w);
      }
    } else {
      w.consecutiveFailures = 0;
      w.attempts.add(false);
      latencyWindow(caseKind, w.id).add(durationMillis);
      finding = judgeRate(w);
      if (finding == null) {
        finding = judgeLatency(w, caseKind);
      }
    }
    if (finding == null) {
      w.refusalReported = false;
    } else {
      eject(w, finding, now);
    }
  }

  /**
   * Whether the scheduler should keep new jobs from {@code workerId} at {@code nowMillis}. Unknown workers
   * are not ejected.
   *
   * @throws NullPointerException if {@code workerId} is null
   */
  public boolean isEjected(String workerId, long nowMillis) {
    Objects.requireNonNull(workerId, "workerId");
    advance(nowMillis);
    WorkerState w = workers.get(workerId);
    return w != null && w.ejected;
  }

  /**
   * Takes the events since the last poll, oldest first, including returns whose time has come by
   * {@code nowMillis}.
   *
   * @return an immutable list, empty if nothing happened
   */
  public List<OutlierEvent> poll(long nowMillis) {
    advance(nowMillis);
    List<OutlierEvent> out = List.copyOf(events);
    events.clear();
    return out;
  }

  /**
   * Every known worker's health at {@code nowMillis}, by worker id in ascending order.
   *
   * @return an immutable copy
   */
  public Map<String, WorkerHealth> snapshot(long nowMillis) {
    advance(nowMillis);
    Map<String, WorkerHealth> out = new TreeMap<>();
    for (WorkerState w : workers.values()) {
      Map<String, Long> medians = new TreeMap<>();
      // Iterating entries does not reorder an access-ordered map; only get and put do.
      for (Map.Entry<String, Map<String, DurationWindow>> kind : latencyByKind.entrySet()) {
        DurationWindow d = kind.getValue().get(w.id);
        if (d != null && d.size() > 0) {
          medians.put(kind.getKey(), d.median());
        }
      }
      out.put(w.id, new WorkerHealth(w.id,
          w.ejected ? OptionalLong.of(w.ejectedUntilMillis) : OptionalLong.empty(),
          w.timesEjected, w.consecutiveFailures, w.attempts.size(), w.attempts.failures(), medians));
    }
    return Collections.unmodifiableMap(out);
  }

  /** How many workers are ejected at {@code nowMillis}. */
  public int ejectedCount(long nowMillis) {
    advance(nowMillis);
    return ejectedCount;
  }

  /** How many workers are known (joined and not left), ejected or not. */
  public int fleetSize() {
    return workers.size();
  }

  /** Ejections since this detector was created. */
  public long ejections() {
    return ejections;
  }

  /** Times a worker qualified for ejection but stayed in service because the share cap was reached. */
  public long refusedEjections() {
    return refusedEjections;
  }

  /** Events dropped because more than {@value #MAX_PENDING_EVENTS} were waiting for {@link #poll}. */
  public long droppedEvents() {
    return droppedEvents;
  }

  public OutlierPolicy policy() {
    return policy;
  }

  // ---- rules ----

  private Finding judgeConsecutive(WorkerState w) {
    int limit = policy.consecutiveFailures();
    if (w.consecutiveFailures < limit) {
      return null;
    }
    return new Finding(OutlierEvent.Rule.CONSECUTIVE_FAILURES,
        w.consecutiveFailures + " consecutive infrastructure failures (limit " + limit + ")");
  }

  private Finding judgeRate(WorkerState w) {
    int minAttempts = policy.minAttempts();
    if (w.attempts.size() < minAttempts) {
      return null;
    }
    int qualified = 1;
    long othersAttempts = 0;
    long othersFailures = 0;
    for (WorkerState o : workers.values()) {
      // Ejected workers are no part of the fleet's figure: their bad record would hide the next bad one.
      if (o != w && !o.ejected && o.attempts.size() >= minAttempts) {
        qualified++;
        othersAttempts += o.attempts.size();
        othersFailures += o.attempts.failures();
      }
    }
    if (qualified < policy.minWorkers()) {
      return null;
    }
    double fleetRate = (double) othersFailures / othersAttempts;
    double limit = Math.max(fleetRate * policy.failureRateFactor(), fleetRate + policy.failureRateMargin());
    double rate = (double) w.attempts.failures() / w.attempts.size();
    if (rate <= limit) {
      return null;
    }
    return new Finding(OutlierEvent.Rule.FAILURE_RATE, String.format(Locale.ROOT,
        "infrastructure failure rate %.2f over its last %d attempts against the fleet's %.2f over %d attempts"
            + " of %d other workers (limit %.2f)",
        rate, w.attempts.size(), fleetRate, othersAttempts, qualified - 1, limit));
  }

  private Finding judgeLatency(WorkerState w, String caseKind) {
    int minSuccesses = policy.minAttempts();
    Map<String, DurationWindow> byWorker = latencyByKind.get(caseKind);
    DurationWindow mine = byWorker.get(w.id);
    if (mine.size() < minSuccesses) {
      return null;
    }
    long myMedian = mine.median();
    long minExcessMillis = policy.latencyMinExcess().toMillis();
    // Durations are never negative, so neither is the fleet's median: this median cannot be far enough above
    // it, and the sort below can be skipped (the common case for fast kinds).
    if (myMedian <= minExcessMillis) {
      return null;
    }
    int qualified = 1;
    int pooledCount = 0;
    List<DurationWindow> others = new ArrayList<>();
    for (Map.Entry<String, DurationWindow> e : byWorker.entrySet()) {
      WorkerState o = workers.get(e.getKey());
      DurationWindow d = e.getValue();
      if (o != null && o != w && !o.ejected && d.size() >= minSuccesses) {
        qualified++;
        pooledCount += d.size();
        others.add(d);
      }
    }
    if (qualified < policy.minWorkers()) {
      return null;
    }
    long[] pooled = new long[pooledCount];
    int at = 0;
    for (DurationWindow d : others) {
      at = d.copyInto(pooled, at);
    }
    long fleetMedian = DurationWindow.lowerMedian(pooled);
    double limit = Math.max(fleetMedian * policy.latencyFactor(), (double) fleetMedian + minExcessMillis);
    if (myMedian <= limit) {
      return null;
    }
    return new Finding(OutlierEvent.Rule.LATENCY, String.format(Locale.ROOT,
        "median latency %d ms over its last %d successes against the fleet's %d ms over %d successes of %d other"
            + " workers for kind %s (limit %.0f ms)",
        myMedian, mine.size(), fleetMedian, pooledCount, qualified - 1, caseKind, limit));
  }

  // ---- ejection and return ----

  private void eject(WorkerState w, Finding finding, long now) {
    int cap = policy.maxEjected(workers.size());
    if (ejectedCount >= cap) {
      refusedEjections++;
      if (!w.refusalReported) {
        w.refusalReported = true;
        String reason = finding.reason + "; but " + ejectedCount + " of " + workers.size()
            + " workers are already ejected, the most allowed at once (max(1, floor(" + workers.size() + " x "
            + policy.maxEjectedShare() + ")) = " + cap + ")";
        emit(new OutlierEvent(OutlierEvent.Type.EJECTION_REFUSED, w.id, finding.rule, reason, now, now,
            w.timesEjected));
      }
      return;
    }
    w.timesEjected++;
    long lengthMillis = policy.ejectionMillis(w.timesEjected);
    long until = now > Long.MAX_VALUE - lengthMillis ? Long.MAX_VALUE : now + lengthMillis;
    w.ejected = true;
    w.ejectedAtMillis = now;
    w.ejectedUntilMillis = until;
    w.refusalReported = false;
    w.ejection = new OutlierEvent(OutlierEvent.Type.EJECTED, w.id, finding.rule, finding.reason, now, until,
        w.timesEjected);
    ejectedCount++;
    ejections++;
    nextReturnMillis = Math.min(nextReturnMillis, until);
    emit(w.ejection);
  }

  // Moves the detector's time to nowMillis (never backwards) and returns every worker whose ejection has run
  // out by then, earliest first.
  private long advance(long nowMillis) {
    long now = Math.max(nowMillis, lastNowMillis);
    lastNowMillis = now;
    if (now >= nextReturnMillis) {
      List<WorkerState> due = new ArrayList<>();
      long next = Long.MAX_VALUE;
      for (WorkerState w : workers.values()) {
        if (w.ejected && w.ejectedUntilMillis <= now) {
          due.add(w);
        } else if (w.ejected) {
          next = Math.min(next, w.ejectedUntilMillis);
        }
      }
      due.sort(Comparator.comparingLong((WorkerState w) -> w.ejectedUntilMillis).thenComparing(w -> w.id));
      for (WorkerState w : due) {
        returnToService(w);
      }
      nextReturnMillis = next;
    }
    return now;
  }

  private void returnToService(WorkerState w) {
    w.ejected = false;
    ejectedCount--;
    w.staleBeforeMillis = w.ejectedAtMillis + (w.ejectedUntilMillis - w.ejectedAtMillis) / 2;
    w.consecutiveFailures = 0;
    w.attempts.clear();
    w.refusalReported = false;
    for (Map<String, DurationWindow> byWorker : latencyByKind.values()) {
      byWorker.remove(w.id);
    }
    OutlierEvent ejection = w.ejection;
    emit(new OutlierEvent(OutlierEvent.Type.RETURNED, w.id, ejection.rule(), ejection.reason(),
        w.ejectedUntilMillis, w.ejectedUntilMillis, w.timesEjected));
  }

  private void emit(OutlierEvent event) {
    if (events.size() >= MAX_PENDING_EVENTS) {
      events.pollFirst();
      droppedEvents++;
    }
    events.addLast(event);
  }

  private DurationWindow latencyWindow(String caseKind, String workerId) {
    Map<String, DurationWindow> byWorker = latencyByKind.get(caseKind);
    if (byWorker == null) {
      byWorker = new HashMap<>();
      latencyByKind.put(caseKind, byWorker);
      if (latencyByKind.size() > MAX_TRACKED_KINDS) {
        Iterator<String> eldest = latencyByKind.keySet().iterator();
        eldest.next();
        eldest.remove();
      }
    }
    return byWorker.computeIfAbsent(workerId, id -> new DurationWindow(policy.window()));
  }

  // ---- state ----

  private record Finding(OutlierEvent.Rule rule, String reason) {}

  private static final class WorkerState {
    final String id;
    final FailureWindow attempts;
    int consecutiveFailures;
    boolean ejected;
    long ejectedAtMillis;
    long ejectedUntilMillis;
    int timesEjected;
    // The event of the current or last ejection, for the return's event.
    OutlierEvent ejection;
    // Reports of attempts that started before this are about a worker that has since been ejected.
    long staleBeforeMillis = Long.MIN_VALUE;
    // Whether an EJECTION_REFUSED event was sent for the current episode of qualifying.
    boolean refusalReported;

    WorkerState(String id, int window) {
      this.id = id;
      this.attempts = new FailureWindow(window);
    }
  }

  /** The last {@code capacity} attempts of a worker, as failed or not, with a running failure count. */
  private static final class FailureWindow {
    private final boolean[] failed;
    private int size;
    private int next;
    private int failures;

    FailureWindow(int capacity) {
      this.failed = new boolean[capacity];
    }

    void add(boolean failure) {
      if (size == failed.length) {
        if (failed[next]) {
          failures--;
        }
      } else {
        size++;
      }
      failed[next] = failure;
      if (failure) {
        failures++;
      }
      next = (next + 1) % failed.length;
    }

    void clear() {
      Arrays.fill(failed, false);
      size = 0;
      next = 0;
      failures = 0;
    }

    int size() {
      return size;
    }

    int failures() {
      return failures;
    }
  }

  /** The last {@code capacity} success durations of one worker for one kind, in ms. */
  private static final class DurationWindow {
    private final long[] millis;
    private int size;
    private int next;

    DurationWindow(int capacity) {
      this.millis = new long[capacity];
    }

    void add(long durationMillis) {
      millis[next] = durationMillis;
      next = (next + 1) % millis.length;
      size = Math.min(size + 1, millis.length);
    }

    int size() {
      return size;
    }

    long median() {
      return lowerMedian(Arrays.copyOf(millis, size));
    }

    // Copies the durations into target from offset; returns the offset after them. Order does not matter:
    // the window is only ever read as a multiset.
    int copyInto(long[] target, int offset) {
      System.arraycopy(millis, 0, target, offset, size);
      return offset + size;
    }

    // The lower median (the middle element, or the lower of the two middle ones), so that it is always a
    // duration that was observed, in whole ms. Sorts values in place.
    static long lowerMedian(long[] values) {
      Arrays.sort(values);
      return values[(values.length - 1) / 2];
    }
  }
}
