package dev.tally.http;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.RunResumption;
import dev.tally.core.store.RunView;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A long-lived coordinator with its HTTP API: what {@code tally server} runs. The coordinator is built by
 * the {@link CoordinatorBuilder} given (which holds the product's defaults); the API is served over it
 * ({@link ApiServer}); every unfinished run in the store is resumed when it takes the lead, so a server restarted on its
 * store after a {@code kill -9} finishes what the killed one left ({@link RunResumption#takeOver} releases
 * the dead coordinator's leases at once when its workers cannot come back).
 *
 * <p><b>Stopping</b> ({@link #stopLeasing}, {@link #awaitInFlight}, {@link #close}): the scheduler leases
 * nothing more while the results of what is in flight are still recorded, for up to a bounded time; then
 * the API's port closes and the worker port says Goodbye to every worker. What is still leased when the
 * time is up stays leased, as after a {@code kill -9}, for the next server on the store to take over.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class TallyServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(TallyServer.class);

  /**
   * How long a stopping server waits for the results of what its workers hold, by default: Kubernetes'
   * termination grace period, and the worker's own drain timeout, so a server stopped like a pod gets the
   * same time its workers give their cases.
   */
  public static final Duration DEFAULT_STOP_GRACE = Duration.ofSeconds(30);

  /** How often {@link #awaitInFlight} looks at the count: a few scheduler steps. */
  private static final long IN_FLIGHT_POLL_MILLIS = 50;

  private final Coordinator coordinator;
  private final ApiServer api;
  private final List<RunResumption.TakeOver> resumed;

  private TallyServer(Coordinator coordinator, ApiServer api, List<RunResumption.TakeOver> resumed) {
    this.coordinator = coordinator;
    this.api = api;
    this.resumed = resumed;
  }

  /**
   * Starts the coordinator, resumes every unfinished run in its store, and serves the API.
   *
   * @param coordinator the coordinator's builder, its store and worker port set; the API's {@link
   *     SchedulerMetrics} are added to its observers
   * @param api where and how to serve the API
   * @return the running server
   * @throws CoordinatorBuilder.StartException if the coordinator cannot start (the store is locked or
   *     unusable, the worker port cannot be bound)
   * @throws ApiServer.StartException if the API cannot be served; the coordinator is closed again
   * @throws dev.tally.core.store.StoreException if the store fails while the runs are resumed
   */
  public static TallyServer start(CoordinatorBuilder coordinator, ApiServer.Settings api)
      throws CoordinatorBuilder.StartException, ApiServer.StartException {
    Objects.requireNonNull(api, "api");
    ApiServer.requireFreePort(api, coordinator.listen()); // before the store is created or led
    SchedulerMetrics live = SchedulerMetrics.observing(coordinator);
    Coordinator started = coordinator.standby(true).start();
    try {
      ApiServer served = ApiServer.start(api, started, live);
      started.advertiseApi(served.url());
      try {
        List<RunResumption.TakeOver> resumed = new java.util.concurrent.CopyOnWriteArrayList<>();
        started.whenLeading(() -> {
          List<RunResumption.TakeOver> taken = started.resumeUnfinishedRuns();
          resumed.addAll(taken);
          if (!taken.isEmpty()) {
            log.info("leading under epoch {}: resumed {} unfinished runs", started.epoch(), taken.size());
          }
        });
        return new TallyServer(started, served, resumed);
      } catch (RuntimeException e) {
        served.close();
        throw e;
      }
    } catch (ApiServer.StartException | RuntimeException e) {
      started.close();
      throw e;
    }
  }

  /** The coordinator. */
  public Coordinator coordinator() {
    return coordinator;
  }

  /** The API. */
  public ApiServer api() {
    return api;
  }

  /**
   * The unfinished runs found in the store when this server took the lead (at start, or later for a
   * standby), taken over and resumed; empty while it stands by.
   */
  public List<RunResumption.TakeOver> resumed() {
    return resumed;
  }

  /** First step of a graceful stop: nothing more is leased; results still flow. Idempotent. */
  public void stopLeasing() {
    coordinator.stopLeasing();
  }

  /**
   * Waits until no assignment is out on a worker, {@code grace} has passed, or the coordinator has stepped
   * down (it records nothing more).
   *
   * @return how many assignments were still out when it returned (0: every result came in)
   * @throws InterruptedException if interrupted while waiting
   */
  public int awaitInFlight(Duration grace) throws InterruptedException {
    long deadline = System.nanoTime() + grace.toNanos();
    int inFlight = coordinator.inFlight();
    // A coordinator that steps down meanwhile records nothing more: what is in flight stays so.
    while (inFlight > 0 && System.nanoTime() < deadline && coordinator.steppedDown().isEmpty()) {
      TimeUnit.MILLISECONDS.sleep(IN_FLIGHT_POLL_MILLIS); // the count is published once per scheduler step
      inFlight = coordinator.inFlight();
    }
    return inFlight;
  }

  /**
   * Closes the API's port, then says Goodbye to every worker, stops the scheduler and closes the store.
   * The API goes first so that no request is answered from a store that is closing.
   */
  @Override
  public void close() {
    try {
      api.close();
    } finally {
      coordinator.close();
      log.info("tally server stopped");
    }
  }
}
