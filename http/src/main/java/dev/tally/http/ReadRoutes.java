package dev.tally.http;

import java.util.ArrayList;
import dev.tally.http.dto.ProgressObject;
import dev.tally.core.store.ProgressBucket;
import java.util.Locale;
import dev.tally.core.store.JobState;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.CaseView;
import dev.tally.core.store.CaseQuery;
import dev.tally.core.Verdict;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.report.RunReport;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.http.dto.AttemptList;
import dev.tally.http.dto.CaseList;
import dev.tally.http.dto.CaseObject;
import dev.tally.http.dto.Problem;
import dev.tally.http.dto.RunList;
import dev.tally.http.dto.RunObject;
import dev.tally.http.dto.WorkerList;
import io.javalin.http.Context;
import io.javalin.openapi.HttpMethod;
import io.javalin.openapi.OpenApi;
import io.javalin.openapi.OpenApiContent;
import io.javalin.openapi.OpenApiParam;
import io.javalin.openapi.OpenApiResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The API's reads: runs, a run's cases and a case's attempts, a finished run's results and summary, and
 * the workers. Each answers from the store's read side (in SQLite, a connection of its own under WAL), so
 * a read never waits for the scheduler's writer nor holds it up.
 *
 * <p>Thread-safety: stateless beyond its collaborators; handlers run on Jetty's threads concurrently.
 */
final class ReadRoutes {
  static final String RUNS = ApiServer.BASE + "/runs";
  static final String RUN = RUNS + "/{id}";
  static final String CASES = RUN + "/cases";
  static final String ATTEMPTS = CASES + "/{caseId}/attempts";
  static final String RESULTS = RUN + "/results";
  static final String SUMMARY = RUN + "/summary";
  /** The longest {@code groupBy} field name: a case field's name, not a text. */
  static final int MAX_GROUP_BY_CHARS = 200;
  static final String PROGRESS = RUN + "/progress";
  static final String WORKERS = ApiServer.BASE + "/workers";
  /** The most points a progress chart gets: a few hundred is a smooth line at any width a page has. */
  static final int MAX_PROGRESS_POINTS = 300;

  /**
   * The verdicts {@code ?verdict=} takes, the words a case object's verdict has ({@link
   * dev.tally.core.store.JobView#reportedVerdict}): every {@link dev.tally.core.Verdict} ({@code error} takes
   * in the cases out of attempts) and {@code cancelled} (the same cases as {@code ?state=cancelled}).
   */
  static final List<String> VERDICTS = java.util.stream.Stream.concat(java.util.Arrays.stream(dev.tally.core.Verdict.values())
      .map(dev.tally.core.Verdict::wireName), java.util.stream.Stream.of(dev.tally.core.store.JobView.CANCELLED)).toList();
  /** The states {@code ?state=} takes. */
  static final List<String> STATES = List.of("pending", "leased", "done", "failed", "cancelled");

  private final Coordinator coordinator;

  private final java.time.Clock clock;

  ReadRoutes(Coordinator coordinator, java.time.Clock clock) {
    this.coordinator = Objects.requireNonNull(coordinator, "coordinator");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  private Store store() {
    return coordinator.store();
  }

  @OpenApi(path = RUNS, methods = HttpMethod.GET, operationId = "listRuns", tags = "runs",
      summary = "The runs in the store, newest first, a page at a time",
      queryParams = {
          @OpenApiParam(name = "before", type = Long.class, description = "Only runs with a smaller id (the next page's cursor)"),
          @OpenApiParam(name = "limit", type = Integer.class, description = "Runs per page, 1 to " + Params.MAX_PAGE_LIMIT + " (default " + Params.DEFAULT_PAGE_LIMIT + ")")},
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = RunList.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void listRuns(Context ctx) {
    long before = Params.optionalLong(ctx, "before", Long.MAX_VALUE, 1);
    int limit = Params.limit(ctx);
    // One more than the page, to know whether there is a next one; the store reads only that many.
    List<RunView> older = store().runs(new RunPage(before, Math.min(limit + 1, RunPage.MAX_LIMIT)));
    boolean more = older.size() > limit || (older.size() == limit && limit == RunPage.MAX_LIMIT
        && !store().runs(new RunPage(older.get(limit - 1).runId(), 1)).isEmpty());
    List<RunObject> page = older.stream().limit(limit).map(ApiViews::run).toList();
    String next = more ? RUNS + "?before=" + page.get(page.size() - 1).id() + "&limit=" + limit : null;
    ctx.json(new RunList(page, next));
  }

  @OpenApi(path = RUN, methods = HttpMethod.GET, operationId = "getRun", tags = "runs", summary = "One run: its state, settings and counters",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = RunObject.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void getRun(Context ctx) {
    ctx.json(ApiViews.run(run(Params.runId(ctx))));
  }

  @OpenApi(path = CASES, methods = HttpMethod.GET, operationId = "listCases", tags = "runs",
      summary = "A run's cases in dataset order, a page at a time, optionally of one verdict or state",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      queryParams = {
          @OpenApiParam(name = "verdict", description = "pass, fail, error (out of attempts included) or cancelled"),
          @OpenApiParam(name = "state", description = "pending, leased, done, failed or cancelled"),
          @OpenApiParam(name = "q", description = "Only cases whose id contains this text (ASCII case ignored)"),
          @OpenApiParam(name = "minAttempts", type = Integer.class, description = "Only cases tried at least this many times (2: retried)"),
          @OpenApiParam(name = "after", type = Integer.class, description = "Only cases after this position (the next page's cursor)"),
          @OpenApiParam(name = "limit", type = Integer.class, description = "Cases per page, 1 to " + Params.MAX_PAGE_LIMIT + " (default " + Params.DEFAULT_PAGE_LIMIT + ")")},
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = CaseList.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void listCases(Context ctx) {
    long runId = Params.runId(ctx);
    String verdict = Params.oneOf(ctx, "verdict", VERDICTS);
    String state = Params.oneOf(ctx, "state", STATES);
    long after = Params.optionalLong(ctx, "after", -1, 0);
    int limit = Params.limit(ctx);
    String q = ctx.queryParam("q");
    q = q == null || q.isEmpty() ? null : q;
    if (q != null && q.length() > CaseQuery.MAX_SEARCH_CHARS) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, "q", "q is at most " + CaseQuery.MAX_SEARCH_CHARS
          + " characters (a case id's length), got " + q.length());
    }
    int minAttempts = (int) Math.min(Params.optionalLong(ctx, "minAttempts", 0, 0), Integer.MAX_VALUE);
    run(runId);
    boolean cancelled = dev.tally.core.store.JobView.CANCELLED.equals(verdict);
    Verdict v = verdict == null || cancelled ? null : Verdict.parse(verdict);
    JobState s = state == null ? null : JobState.valueOf(state.toUpperCase(Locale.ROOT));
    if (cancelled && s != null && s != JobState.CANCELLED) {
      ctx.json(new CaseList(List.of(), null)); // no case is cancelled and in another state
      return;
    }
    s = cancelled ? JobState.CANCELLED : s;
    // The store filters and pages on its side (an index walk), so a page of a million-case run costs a page.
    List<CaseView> page = store().cases(runId, new CaseQuery(v, s, (int) Math.min(after, Integer.MAX_VALUE), limit, q, minAttempts));
    boolean more = page.size() == limit
        && !store().cases(runId, new CaseQuery(v, s, page.get(limit - 1).job().position(), 1, q, minAttempts)).isEmpty();
    List<CaseObject> cases = page.stream().map(ApiViews::caseObject).toList();
    String next = null;
    if (more) {
      StringBuilder url = new StringBuilder(CASES.replace("{id}", Long.toString(runId)))
          .append("?after=").append(page.get(page.size() - 1).job().position()).append("&limit=").append(limit);
      if (verdict != null) {
        url.append("&verdict=").append(verdict);
      }
      if (state != null) {
        url.append("&state=").append(state);
      }
      if (q != null) {
        url.append("&q=").append(java.net.URLEncoder.encode(q, java.nio.charset.StandardCharsets.UTF_8));
      }
      if (minAttempts > 0) {
        url.append("&minAttempts=").append(minAttempts);
      }
      next = url.toString();
    }
    ctx.json(new CaseList(cases, next));
  }

  @OpenApi(path = PROGRESS, methods = HttpMethod.GET, operationId = "getProgress", tags = "runs",
      summary = "A run's ended cases over time, cumulative, at most 300 points (for a progress chart, its rate and ETA)",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = ProgressObject.class)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void getProgress(Context ctx) {
    RunView run = run(Params.runId(ctx));
    long end = run.ended() ? run.finishedAtMillis() : clock.millis();
    // Spans of whole seconds, as many as fit in the point budget over the run's life so far.
    long span = Math.max(1_000, ((Math.max(0, end - run.createdAtMillis()) / MAX_PROGRESS_POINTS) / 1_000 + 1) * 1_000);
    long passed = 0;
    long failed = 0;
    long errored = 0;
    List<ProgressObject.Point> points = new ArrayList<>();
    for (ProgressBucket b : store().progress(run.runId(), span)) {
      passed += b.passed();
      failed += b.failed();
      errored += b.errored();
      points.add(new ProgressObject.Point(ApiViews.time(run.createdAtMillis() + (b.index() + 1) * span),
          passed + failed + errored, passed, failed, errored));
    }
    ctx.json(new ProgressObject(run.runId(), run.counters().total(), span, points));
  }

  @OpenApi(path = ATTEMPTS, methods = HttpMethod.GET, operationId = "listAttempts", tags = "runs",
      summary = "A case's ended attempts: worker, fencing token, times and how each ended",
      pathParams = {@OpenApiParam(name = "id", type = Long.class, required = true), @OpenApiParam(name = "caseId", required = true)},
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = AttemptList.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void listAttempts(Context ctx) {
    long runId = Params.runId(ctx);
    String caseId = ctx.pathParam("caseId");
    run(runId);
    List<AttemptView> attempts = store().attempts(runId, caseId).orElseThrow(() ->
        ProblemException.parameter(ProblemType.NOT_FOUND, "caseId", "run " + runId + " has no case " + dev.tally.core.cases.CaseLines.quotedId(caseId)));
    ctx.json(new AttemptList(attempts.stream().map(ApiViews::attempt).toList()));
  }

  @OpenApi(path = RESULTS, methods = HttpMethod.GET, operationId = "getResults", tags = "runs",
      summary = "A finished run's results: exactly the lines tally run writes to results.jsonl",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(type = "string", mimeType = RunReport.RESULTS_MEDIA_TYPE)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the run has not finished", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void getResults(Context ctx) throws IOException {
    long runId = Params.runId(ctx);
    requireFinished(run(runId));
    ctx.contentType(RunReport.RESULTS_MEDIA_TYPE);
    OutputStream out = ctx.outputStream();
    RunReport.writeResults(store(), runId, out);
    out.flush();
  }

  @OpenApi(path = SUMMARY, methods = HttpMethod.GET, operationId = "getSummary", tags = "runs",
      summary = "A finished run's summary: exactly what tally run writes to summary.json",
      description = "rows are the counts as tally run's table lists them, in its order and words."
          + " wallMillis is this coordinator's part (from its start to the run's end); 0 if the run finished under an"
          + " earlier coordinator. With groupBy=FIELD, also accuracy and mean score per value of the cases' metadata.FIELD"
          + " (else FIELD), as tally run --group-by writes them; passAtK when the cases are epochs; usage for a model run.",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      queryParams = @OpenApiParam(name = "groupBy", description = "a case field to group the figures by"),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(type = "object", mimeType = "application/json")),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the run has not finished", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void getSummary(Context ctx) throws IOException {
    long runId = Params.runId(ctx);
    RunView run = run(runId);
    requireFinished(run);
    String groupBy = ctx.queryParam("groupBy");
    if (groupBy != null && (groupBy.isBlank() || groupBy.length() > MAX_GROUP_BY_CHARS)) {
      throw ProblemException.parameter(ProblemType.INVALID_REQUEST, "groupBy",
          "groupBy must be a field name of 1 to " + MAX_GROUP_BY_CHARS + " characters");
    }
    RunReport.Times times = new RunReport.Times(coordinator.wallMillis(runId).orElse(0), RunReport.runWallMillis(run));
    ctx.contentType("application/json").result(RunReport.summaryBytes(runId, run.counters(), times,
        RunReport.caseFigures(store(), runId, groupBy)));
  }

  @OpenApi(path = WORKERS, methods = HttpMethod.GET, operationId = "listWorkers", tags = "workers",
      summary = "The workers as their coordinator last reported them: live or left (with why), suspicion, drain, ejection",
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = WorkerList.class)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void listWorkers(Context ctx) {
    long now = clock.millis();
    ctx.json(new WorkerList(store().workerStatuses().stream().map(w -> ApiViews.worker(w, now)).toList()));
  }

  /** The run, or a 404 problem. */
  RunView run(long runId) {
    return store().run(runId).orElseThrow(() -> ProblemException.parameter(ProblemType.NOT_FOUND, "id", "there is no run " + runId));
  }

  private static void requireFinished(RunView run) {
    if (!run.ended()) {
      throw ProblemException.of(ProblemType.RUN_NOT_FINISHED, "run " + run.runId() + " is still running ("
          + run.counters().judged() + " of " + run.counters().total()
          + " cases ended); its results and summary exist once it finishes");
    }
  }


}
