package dev.tally.http;

import dev.tally.coordinator.Coordinator;
import dev.tally.core.detect.FailureDetector;
import dev.tally.http.dto.FleetEvent;
import dev.tally.http.dto.FleetEventList;
import dev.tally.http.dto.Problem;
import dev.tally.http.dto.SuspicionHistory;
import io.javalin.http.Context;
import io.javalin.openapi.HttpMethod;
import io.javalin.openapi.OpenApi;
import io.javalin.openapi.OpenApiContent;
import io.javalin.openapi.OpenApiParam;
import io.javalin.openapi.OpenApiResponse;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The fleet's recent past ({@link FleetHistory}): each live worker's suspicion over the last minutes,
 * against its detector's drain and conviction levels, and the fleet's recent changes.
 *
 * <p>Thread-safety: stateless beyond its collaborators; handlers run on Jetty's threads concurrently.
 */
final class FleetRoutes {
  static final String SUSPICION = ReadRoutes.WORKERS + "/suspicion";
  static final String EVENTS = ReadRoutes.WORKERS + "/events";
  /** The longest chart asked for, in minutes: what the history keeps. */
  static final long MAX_MINUTES = FleetHistory.KEEP_MILLIS / 60_000;

  private final FleetHistory history;
  private final String detector;
  private final double drainLevel;
  private final double convictionLevel;
  private final Clock clock;
  private final Coordinator coordinator;

  FleetRoutes(FleetHistory history, Coordinator coordinator, Clock clock) {
    this.history = Objects.requireNonNull(history, "history");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.coordinator = coordinator;
    // The levels are the detector's own (one owner); a detector made now only to read them.
    FailureDetector probe = coordinator.detectorSettings().factory().apply(System.nanoTime());
    this.detector = coordinator.detectorSettings().kind().configName();
    this.drainLevel = probe.drainLevel();
    this.convictionLevel = probe.convictionLevel();
  }

  @OpenApi(path = SUSPICION, methods = HttpMethod.GET, operationId = "getSuspicionHistory", tags = "workers",
      summary = "Each live worker's failure-detector suspicion over the last minutes, with the drain and conviction levels"
          + " and the coordinator's local health multiplier",
      queryParams = @OpenApiParam(name = "minutes", type = Integer.class, description = "How far back, 1 to 10 (default 5)"),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = SuspicionHistory.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void getSuspicion(Context ctx) {
    long minutes = Params.optionalLong(ctx, "minutes", 5, 1);
    if (minutes > MAX_MINUTES) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, "minutes",
          "minutes must be from 1 to " + MAX_MINUTES + " (what the server keeps), got " + minutes);
    }
    List<SuspicionHistory.Worker> workers = new ArrayList<>();
    history.suspicion(clock.millis() - minutes * 60_000).forEach((id, samples) -> workers.add(new SuspicionHistory.Worker(
        id, history.name(id), samples.stream().map(s -> new SuspicionHistory.Sample(ApiViews.time(s.atMillis()), s.level())).toList())));
    dev.tally.core.detect.LocalHealth.Snapshot h = coordinator.localHealth();
    ctx.json(new SuspicionHistory(detector, drainLevel, convictionLevel, workers,
        new SuspicionHistory.LocalHealth(h.enabled(), h.multiplier(), h.lateTicks(), h.correlatedTicks())));
  }

  @OpenApi(path = EVENTS, methods = HttpMethod.GET, operationId = "listFleetEvents", tags = "workers",
      summary = "The fleet's recent changes: joined, left (with why), draining, accepting, ejected (with the reason)",
      queryParams = @OpenApiParam(name = "after", type = Long.class, description = "Only changes after this seq"),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = FleetEventList.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void listEvents(Context ctx) {
    long after = Params.optionalLong(ctx, "after", 0, 0);
    ctx.json(new FleetEventList(history.events(after).stream().map(FleetRoutes::event).toList()));
  }

  /** The API's form of a change. */
  static FleetEvent event(FleetHistory.Change c) {
    return new FleetEvent(c.seq(), ApiViews.time(c.atMillis()), c.kind(), c.workerId(), c.name(), c.detail());
  }
}
