package dev.tally.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.WorkerStatus;
import dev.tally.http.dto.Problem;
import dev.tally.http.dto.WorkerObject;
import io.javalin.http.sse.SseClient;
import io.javalin.openapi.HttpMethod;
import io.javalin.openapi.OpenApi;
import io.javalin.openapi.OpenApiContent;
import io.javalin.openapi.OpenApiResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /api/v1/events}: Server-Sent Events for a dashboard. {@code event: run} carries a run object
 * whenever the run's counters or state changed, at most once per period per run (4 a second at the
 * default period); {@code event: worker} carries a worker object whenever what its coordinator reports of
 * it changed (joined, left, suspicion, drain, ejection, jobs in flight); {@code event: fleet} carries each
 * change of the fleet as {@link FleetHistory} sees it (joined, left with why, draining, ejected with the
 * reason). Each {@code data:} is one line of JSON, the same objects as {@code GET /runs/{id}}, {@code GET
 * /workers} and {@code GET /workers/events} answer.
 *
 * <p><b>How.</b> One publisher thread looks every period at the runs not yet finished (found again in the
 * store every {@value #RESCAN_PERIODS} periods, so a new run is noticed) and, every {@value
 * #WORKER_PERIODS} periods, at the workers; it reads the store's read side only. Looking, rather than being
 * told of every commit, is what bounds the rate: a run that records 10,000 results a second still sends
 * 4 events. Nothing is read while no client listens.
 *
 * <p><b>Every end is sent.</b> A run that is created and ends between two looks (ten quick cases take a
 * fifth of a second) was never seen running by the publisher, but a client may have read it running
 * ({@code GET /runs/{id}}) in that moment: a look therefore also sends each run that ended in the last
 * {@value #RECENTLY_ENDED_MILLIS} ms and has not been sent ended, so such a client sees the end within a
 * rescan; a run ended again ({@code retry-errors} ran its errored cases, quickly) has a later end time,
 * and is sent again. The window is wider than a rescan and than clocks disagree between coordinators (the
 * run's end time is its leader's); a client merges a repeated run object with what it has.
 *
 * <p><b>A new client hears the runs as they are.</b> When a client connects it is sent every run not ended,
 * and every run that ended in the last {@value #RECENTLY_ENDED_MILLIS} ms, once each: a client that connects
 * after the end it waits for (a script that submitted a run, then listens) is not left waiting. Then it gets
 * the changes, with every other client.
 *
 * <p><b>An end is sent at once.</b> When a run this server serves ends, the coordinator says so ({@link
 * #runEnded}) and the publisher looks at once instead of at its next period, so a client waiting for the end
 * (a script, {@code tally wait}) hears it within milliseconds rather than up to a period later. Ends that
 * come while such a look is pending are one look.
 *
 * <p><b>Clients that go.</b> A client is dropped when a write to it fails (Javalin then closes it and runs
 * its close callback) and when it closes its side; a comment is written every {@value
 * #KEEP_ALIVE_PERIODS} periods so that a client that vanished without closing is found even while nothing
 * changes. At most {@value #MAX_CLIENTS} clients listen at once; more get 503.
 *
 * <p>Thread-safety: {@link #accept} runs on Jetty's threads; everything else on the publisher's thread.
 */
final class EventStream implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EventStream.class);

  static final String PATH = ApiServer.BASE + "/events";

  /** Clients at once: each holds a connection and a Jetty thread's worth of buffers; a dashboard needs one. */
  static final int MAX_CLIENTS = 100;
  /** Unfinished runs are looked up again in the store every this many periods (2.5 s at the default). */
  static final int RESCAN_PERIODS = 10;
  /** Workers are read every this many periods (1 s at the default): the coordinator reports them every 2 s. */
  static final int WORKER_PERIODS = 4;
  /** A keep-alive comment every this many periods (15 s at the default), under proxies' idle timeouts. */
  static final int KEEP_ALIVE_PERIODS = 60;
  /** A run that ended this recently (by its end time) is sent ended if it was not yet: see the class doc. */
  static final long RECENTLY_ENDED_MILLIS = 60_000;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Store store;
  private final FleetHistory fleet;
  /** Wall-clock time, epoch milliseconds: what a run's end time is compared with. */
  private final java.util.function.LongSupplier nowMillis;
  /** The last fleet change sent. */
  private long fleetSeq;
  private final long periodMillis;
  private final Set<SseClient> clients = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService publisher = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "tally-api-events");
    t.setDaemon(true);
    return t;
  });
  // The publisher thread's own state.
  private final Map<Long, RunView> sentRuns = new HashMap<>();
  private final Map<String, WorkerObject> sentWorkers = new HashMap<>();
  /** Runs sent ended within {@link #RECENTLY_ENDED_MILLIS}, with the end time sent (to forget them after). */
  private final Map<Long, Long> sentEnded = new HashMap<>();
  private long tick;
  /** Runs the coordinator said ended, for the next look (from any thread). */
  private final java.util.Queue<Long> endedNow = new java.util.concurrent.ConcurrentLinkedQueue<>();
  /** Whether a look for {@link #endedNow} is queued on the publisher and has not begun. */
  private final java.util.concurrent.atomic.AtomicBoolean lookPending = new java.util.concurrent.atomic.AtomicBoolean();

  EventStream(Store store, FleetHistory fleet, long periodMillis, java.util.function.LongSupplier nowMillis) {
    this.store = Objects.requireNonNull(store, "store");
    this.fleet = Objects.requireNonNull(fleet, "fleet");
    this.nowMillis = Objects.requireNonNull(nowMillis, "nowMillis");
    this.periodMillis = periodMillis;
  }

  void start() {
    publisher.scheduleWithFixedDelay(() -> publishSafely(true), periodMillis, periodMillis, TimeUnit.MILLISECONDS);
  }

  @OpenApi(path = PATH, methods = HttpMethod.GET, operationId = "events", tags = "events",
      summary = "Server-Sent Events: 'run' (a run object, at most 4 a second per run), 'worker' (a worker object) and 'fleet' (a change of the fleet, as GET /workers/events lists them)",
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(type = "string", mimeType = "text/event-stream")),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "406", description = "Accept is not text/event-stream", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "503", description = "too many clients listen", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void accept(SseClient client) {
    if (clients.size() >= MAX_CLIENTS) {
      throw ProblemException.of(ProblemType.UNAVAILABLE, "already " + MAX_CLIENTS + " event-stream clients; try again later")
          .withHeaders(Map.of("Retry-After", "10"));
    }
    client.keepAlive();
    client.onClose(() -> clients.remove(client));
    clients.add(client);
    client.sendComment("connected");
    try {
      publisher.execute(() -> greet(client));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closing: the client is closed with the rest
    }
  }

  /**
   * Sends a client that has just connected every run not ended and every run that ended in the last
   * {@value #RECENTLY_ENDED_MILLIS} ms, as they are now: a client that connects after a run's end (a script
   * that submitted, then waits) still hears of it. On the publisher's thread, as every event.
   */
  private void greet(SseClient client) {
    try {
      long recent = recentlyEndedSince();
      for (RunView r : store.runs()) {
        if (current(r, recent) && !client.terminated()) {
          client.sendEvent("run", json(ApiViews.run(r)));
        }
      }
    } catch (RuntimeException e) {
      // The next looks send what changes; a store hiccup costs this client its first picture only.
      log.warn("event stream: cannot send a new client the runs: {}", e.toString());
    }
  }

  /**
   * Refuses (406) a request to the stream that does not send {@code Accept: text/event-stream}, as every
   * {@code EventSource} does: Javalin serves the stream only then, and would otherwise answer an empty 200.
   */
  static void requireEventStreamAccept(io.javalin.http.Context ctx) {
    if (ctx.method() == io.javalin.http.HandlerType.GET && !"text/event-stream".equals(ctx.header("Accept"))) {
      throw ProblemException.header(ProblemType.NOT_ACCEPTABLE, "Accept",
          "the event stream is text/event-stream: send Accept: text/event-stream");
    }
  }

  /**
   * Looks once now, on the publisher's thread (a look's state is that thread's alone), and waits for it: for
   * a test whose publisher's period never comes.
   *
   * @throws IllegalStateException if the look failed, or the wait was interrupted
   */
  void publishNow() {
    try {
      publisher.submit(() -> publish(true)).get();
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("the event stream's look failed", e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the event stream looked", e);
    }
  }

  /**
   * Says that run {@code runId} ended: the publisher looks at once (on its own thread) and sends its end.
   * Returns at once; safe from any thread (the scheduler's, which completes a run); after {@link #close},
   * does nothing.
   */
  void runEnded(long runId) {
    endedNow.add(runId);
    if (lookPending.compareAndSet(false, true)) {
      try {
        publisher.execute(() -> {
          lookPending.set(false);
          publishSafely(false);
        });
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // closed: no client is left to tell
      }
    }
  }

  /** How many clients listen now. */
  int clients() {
    clients.removeIf(SseClient::terminated);
    return clients.size();
  }

  /** A look: {@code periodic} for the period's, which counts the period (rescans, workers, keep-alive). */
  private void publishSafely(boolean periodic) {
    try {
      publish(periodic);
    } catch (RuntimeException e) {
      // A store hiccup costs one period's events, not the stream.
      log.warn("event stream: cannot read the store this time: {}", e.toString());
    }
  }

  private void publish(boolean periodic) {
    if (periodic) {
      tick++;
    }
    clients.removeIf(SseClient::terminated);
    List<FleetHistory.Change> changes = fleet.events(fleetSeq);
    if (!changes.isEmpty()) {
      fleetSeq = changes.get(changes.size() - 1).seq();
    }
    List<Long> ended = new ArrayList<>();
    for (Long id; (id = endedNow.poll()) != null; ) {
      ended.add(id);
    }
    if (clients.isEmpty()) {
      sentRuns.clear(); // a client that connects later starts from what is true then
      sentWorkers.clear();
      sentEnded.clear();
      return;
    }
    for (FleetHistory.Change c : changes) {
      send("fleet", FleetRoutes.event(c));
    }
    for (Long runId : ended) {
      sentRuns.putIfAbsent(runId, null); // read below and sent ended, unless that end was sent already
    }
    if (periodic && tick % KEEP_ALIVE_PERIODS == 0) {
      for (SseClient c : clients) {
        c.sendComment("keep-alive");
      }
    }
    if (periodic && (sentRuns.isEmpty() || tick % RESCAN_PERIODS == 0)) {
      long recent = recentlyEndedSince();
      sentEnded.values().removeIf(endedAt -> endedAt < recent);
      for (RunView r : store.runs()) {
        // An end is the run's end time: a run whose errors were retried ends again, later, and is sent again.
        boolean endNotSent = !r.ended() || !Objects.equals(sentEnded.get(r.runId()), r.finishedAtMillis());
        if (current(r, recent) && endNotSent && !sentRuns.containsKey(r.runId())) {
          sentRuns.put(r.runId(), null);
        }
      }
    }
    for (Long runId : sentRuns.keySet().toArray(Long[]::new)) {
      RunView now = store.run(runId).orElse(null);
      RunView before = sentRuns.get(runId);
      if (now == null || before == null && now.ended() && Objects.equals(sentEnded.get(runId), now.finishedAtMillis())) {
        sentRuns.remove(runId);
        continue;
      }
      if (before == null || changed(before, now)) {
        send("run", ApiViews.run(now));
      }
      if (now.ended()) {
        sentRuns.remove(runId);
        sentEnded.put(runId, now.finishedAtMillis());
      } else {
        sentRuns.put(runId, now);
      }
    }
    if (periodic && tick % WORKER_PERIODS == 1) {
      long at = nowMillis.getAsLong();
      for (WorkerStatus w : store.workerStatuses()) {
        WorkerObject now = ApiViews.worker(w, at);
        WorkerObject before = sentWorkers.get(w.workerId());
        if (before == null ? now.state().equals("live") : changedWorker(before, now)) {
          send("worker", now);
        }
        sentWorkers.put(w.workerId(), now);
      }
    }
  }

  private static boolean changed(RunView before, RunView now) {
    RunCounters a = before.counters();
    RunCounters b = now.counters();
    return !a.equals(b) || before.ended() != now.ended();
  }

  /** A change worth an event: everything but the report's own time. */
  private static boolean changedWorker(WorkerObject a, WorkerObject b) {
    return !Objects.equals(a.state(), b.state()) || !Objects.equals(a.condition(), b.condition())
        || !Objects.equals(a.suspicion(), b.suspicion())
        || a.acceptingWork() != b.acceptingWork() || !Objects.equals(a.ejectedUntil(), b.ejectedUntil())
        || a.timesEjected() != b.timesEjected() || a.inFlight() != b.inFlight();
  }

  /** The time (epoch ms) after which an ended run still counts as recently ended. */
  private long recentlyEndedSince() {
    return nowMillis.getAsLong() - RECENTLY_ENDED_MILLIS;
  }

  /** Whether a run is worth a client's picture: not ended, or ended at or after {@code recentlyEndedSince}. */
  private static boolean current(RunView r, long recentlyEndedSince) {
    return !r.ended() || r.finishedAtMillis() >= recentlyEndedSince;
  }

  private static String json(Object data) {
    try {
      return JSON.writeValueAsString(data);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("an API object cannot fail to serialize", e);
    }
  }

  private void send(String event, Object data) {
    String json = json(data);
    for (SseClient c : clients) {
      if (!c.terminated()) {
        c.sendEvent(event, json); // a failed write terminates the client, which is then dropped
      }
    }
  }

  /** Stops the publisher and closes every client's stream. */
  @Override
  public void close() {
    publisher.shutdownNow();
    for (SseClient c : clients) {
      try {
        c.close();
      } catch (RuntimeException e) {
        // already gone
      }
    }
    clients.clear();
  }

}
