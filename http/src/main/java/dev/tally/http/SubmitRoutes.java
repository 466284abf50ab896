package dev.tally.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.store.CancelResult;
import dev.tally.core.store.CreatedRun;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.core.store.StoredResponse;
import dev.tally.worker.eval.CaseFields;
import io.javalin.http.Context;
import io.javalin.http.HttpStatus;
import io.javalin.openapi.HttpMethod;
import io.javalin.openapi.OpenApi;
import io.javalin.openapi.OpenApiContent;
import io.javalin.openapi.OpenApiParam;
import io.javalin.openapi.OpenApiRequestBody;
import io.javalin.openapi.OpenApiResponse;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.time.Clock;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The API's writes: creating a run, idempotent by key, cancelling one, retrying a finished one's errors, and
 * judging its stored answers again with other scorers.
 *
 * <p><b>Creating a run</b> follows draft-ietf-httpapi-idempotency-key-header-07. The request's key is
 * claimed in the store before its body is read ({@link Store#claimKey}), so a second request with the key
 * while the first still streams is answered 409 at once; the claim's hold is renewed every third of
 * {@link Coordinator#keyHold()} while the body streams and its cases are inserted, so a request that dies
 * (client gone, server killed) holds the key at most one hold. The body is spooled ({@link Upload}), read
 * through the case grammar's one owner ({@link CaseLines}), and the run, its jobs and the key's completed
 * row (fingerprint and this very response) commit in one transaction ({@link Store#createRun}): either a
 * run exists and its key replays its response, or neither. A key already completed is compared by
 * fingerprint (method, path, body): equal is the stored response again with {@code Idempotent-Replayed:
 * true}, different is 422. A request refused for its content completes nothing and releases its key, so
 * a corrected body under the same key is judged afresh.
 *
 * <p><b>Cancelling</b> is idempotent by nature (twice is one cancel), so it needs no key; a key given is
 * checked the same way (a key of another request is 422, one in use 409) and released after the cancel.
 *
 * <p>Thread-safety: handlers run on Jetty's threads concurrently; the store serialises what must be.
 * {@link #close} stops the renewal timer.
 */
final class SubmitRoutes implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SubmitRoutes.class);

  static final String CANCEL = ReadRoutes.RUN + "/cancel";
  static final String RETRY_ERRORS = ReadRoutes.RUN + "/retry-errors";
  static final String RESUME = ReadRoutes.RUN + "/resume";
  static final String RESCORE = ReadRoutes.RUN + "/rescore";
  /** The header a replayed response carries (the draft's section 2.6 example, as Stripe and others send it). */
  static final String REPLAYED = "Idempotent-Replayed";
  /** What a run made over the API is called where a dataset file's path would be. */
  static final String UPLOAD_DATASET = "upload";
  /**
   * How long a cancel waits for the scheduler's commit: a step commits within milliseconds, so this is
   * reached only by a scheduler that has stopped; the client is told to retry (cancel is idempotent).
   */
  static final Duration CANCEL_WAIT = Duration.ofSeconds(30);
  /** The name of the body's source in problems ({@code request body line 7: ...}). */
  private static final String BODY = ApiServer.REQUEST_BODY;

  private final Coordinator coordinator;
  private final BearerAuth auth;
  private final ApiServer.Settings settings;
  private final ObjectMapper json;
  private final ReadRoutes reads;
  private final Clock clock;
  private final ScheduledExecutorService renewals = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "tally-api-key-renewal");
    t.setDaemon(true);
    return t;
  });

  SubmitRoutes(Coordinator coordinator, BearerAuth auth, ApiServer.Settings settings, ObjectMapper json,
      ReadRoutes reads, Clock clock) {
    this.coordinator = coordinator;
    this.auth = auth;
    this.settings = settings;
    this.json = json;
    this.reads = reads;
    this.clock = clock;
  }

  private Store store() {
    return coordinator.store();
  }

  @OpenApi(path = ReadRoutes.RUNS, methods = HttpMethod.POST, operationId = "createRun", tags = "runs",
      summary = "Create a run, idempotent by the Idempotency-Key header",
      description = "The body is the run's fields with its cases inline (application/json), or the fields on the first"
          + " line and one case per line after it (application/x-ndjson, read as a stream). The key, the request's"
          + " fingerprint and this response commit with the run: the same key and body again replay it with"
          + " Idempotent-Replayed: true; the same key with another body or path is 422; while its first request is"
          + " still being processed, 409 with Retry-After.",
      headers = @OpenApiParam(name = "Idempotency-Key", required = true,
          description = "1 to 255 printable ASCII characters, as an sf-string (\"abc\") or bare; made once per submission and sent with each of its retries"),
      requestBody = @OpenApiRequestBody(required = true, content = {
          @OpenApiContent(from = dev.tally.http.dto.RunSubmission.class, mimeType = Upload.JSON),
          @OpenApiContent(type = "string", mimeType = Upload.NDJSON)}),
      responses = {
          @OpenApiResponse(status = "201", description = "the run was created (or, with Idempotent-Replayed: true, had been)",
              content = @OpenApiContent(from = dev.tally.http.dto.RunObject.class)),
          @OpenApiResponse(status = "400", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the key's first request is still being processed",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "413", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "415", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "422", description = "the key was used for another request",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void createRun(Context ctx) throws IOException {
    String key = IdempotencyKeyHeader.parse(headers(ctx, IdempotencyKeyHeader.NAME), true);
    boolean ndjson = Upload.isNdjson(ctx.contentType());
    String encoding = ctx.header("Content-Encoding");
    if (encoding != null && !encoding.isBlank() && !encoding.strip().equalsIgnoreCase("identity")) {
      // RFC 9110 section 8.4: a coding the server does not decode is refused, never read as if it were none.
      throw ProblemException.header(ProblemType.UNSUPPORTED_MEDIA_TYPE, "Content-Encoding",
          "the body must be sent without a content coding, got '" + encoding.strip() + "'");
    }
    String scope = auth.scope();
    long now = clock.millis();
    KeyClaim claim = store().claimKey(scope, key, null, now, now + coordinator.keyHold().toMillis());
    if (claim instanceof KeyClaim.InProgress inProgress) {
      throw keyInUse(inProgress.holdUntilMillis() - now);
    }
    if (claim instanceof KeyClaim.Completed completed) {
      // The draft compares the whole request: the body must be read to know whether it is the same one.
      try (Upload upload = receive(ctx, ndjson)) {
        if (!upload.fingerprint().equals(completed.fingerprint())) {
          throw keyReused(completed.runId());
        }
      }
      answer(ctx, completed.response(), true);
      return;
    }
    String reservation = ((KeyClaim.Claimed) claim).reservationToken();
    AtomicBoolean held = new AtomicBoolean(true);
    long periodMillis = Math.max(1, coordinator.keyHold().toMillis() / 3);
    ScheduledFuture<?> renewal = renewals.scheduleAtFixedRate(() -> renew(scope, key, reservation, held),
        periodMillis, periodMillis, TimeUnit.MILLISECONDS);
    boolean completed = false;
    try (Upload upload = receive(ctx, ndjson)) {
      CreatedRun created = create(upload, ndjson, scope, key, reservation);
      completed = true;
      coordinator.submitNew(created.run().runId());
      answer(ctx, created.response(), false);
    } finally {
      renewal.cancel(false);
      if (!completed) {
        release(scope, key, reservation);
      }
    }
  }

  /** Reads the spooled body's run fields and cases and creates the run with its key, in one transaction. */
  private CreatedRun create(Upload upload, boolean ndjson, String scope, String key, String reservation)
      throws IOException {
    try (InputStream in = Files.newInputStream(upload.spool())) {
      CaseLines lines = CaseLines.of(in, BODY);
      CaseLines.Line header = lines.header().orElseThrow(() -> ProblemException.of(ProblemType.INVALID_REQUEST,
          "the body is empty: a run is its fields (an evaluator at least) and its cases"));
      JsonNode fields;
      try {
        fields = CaseLines.parseStrict(header.text()); // as strict as a case line
      } catch (JsonProcessingException e) {
        throw ProblemException.line(ProblemType.MALFORMED_JSON, 1, null, BODY + " line 1: the run's fields are not one"
            + " JSON object: " + dev.tally.core.JsonErrors.text(e));
      }
      Submission submission = Submission.parse(fields, ndjson ? header.number() : 0, CoordinatorBuilder.DEFAULT_CASE_TIMEOUT);
      RunSpec spec = new RunSpec(UPLOAD_DATASET, submission.evaluator(), submission.limits(), "sha256:" + upload.fingerprint());
      KeyCompletion completion = new KeyCompletion(scope, key, reservation, upload::fingerprint,
          coordinator.idempotencyTtl(), this::render);
      return store().createRun(new NewRun(spec, submission.name()), new CheckedCases(lines, submission, json), completion);
    } catch (CaseSourceException e) {
      if (e.line() == 0) { // not on one line: the run has no cases
        throw ndjson ? ProblemException.of(ProblemType.INVALID_REQUEST, e.getMessage())
            : ProblemException.field(ProblemType.INVALID_REQUEST, "/cases", "/cases: " + e.detail());
      }
      if (e.line() == 1 && !ndjson) { // the rewritten body's first line: the run's own fields
        throw ProblemException.of(ProblemType.INVALID_REQUEST, "the run's fields (all but cases): " + e.detail());
      }
      if (ndjson) {
        throw upload.placeOfLine(ProblemType.INVALID_CASE, e.line(), e.getMessage());
      }
      // A JSON body's cases are spool lines 2...: name them by their place in the body instead.
      String detail = CaseSourceException.withFirstLine(e.detail(), line -> "/cases/" + (line - 2));
      throw upload.placeOfLine(ProblemType.INVALID_CASE, e.line(), "/cases/" + (e.line() - 2) + ": " + detail);
    } catch (KeyReservationLostException e) {
      // Our hold passed unrenewed and another request took the key: that one makes the run.
      throw keyInUse(0);
    }
  }

  /** The response stored with the key and sent now: 201, its Location, the run object. */
  private StoredResponse render(RunView run) {
    try {
      return new StoredResponse(HttpStatus.CREATED.getCode(), "application/json",
          Map.of("Location", ReadRoutes.RUN.replace("{id}", Long.toString(run.runId()))),
          json.writeValueAsBytes(ApiViews.run(run)));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a run object always serialises", e);
    }
  }

  @OpenApi(path = CANCEL, methods = HttpMethod.POST, operationId = "cancelRun", tags = "runs",
      summary = "Cancel a run: its pending cases are never leased, leased ones abandoned, late results refused and counted",
      description = "Idempotent: cancelling a cancelled run answers the run again. An Idempotency-Key is optional.",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      headers = @OpenApiParam(name = "Idempotency-Key", description = "optional; checked as on POST /runs"),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = dev.tally.http.dto.RunObject.class)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the run has finished, or the key is in use",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "422", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "503", description = "the scheduler did not commit the cancel in time; retry",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void cancelRun(Context ctx) {
    long runId = Params.runId(ctx);
    String key = IdempotencyKeyHeader.parse(headers(ctx, IdempotencyKeyHeader.NAME), false);
    reads.run(runId);
    noFields(ctx, "a cancel");
    String scope = auth.scope();
    String reservation = null;
    if (key != null) {
      long now = clock.millis();
      String fingerprint = Upload.fingerprint("POST", ctx.path(), ctx.bodyAsBytes());
      KeyClaim claim = store().claimKey(scope, key, fingerprint, now, now + coordinator.keyHold().toMillis());
      if (claim instanceof KeyClaim.InProgress inProgress) {
        throw keyInUse(inProgress.holdUntilMillis() - now);
      }
      if (claim instanceof KeyClaim.Completed completed) {
        throw keyReused(completed.runId()); // only a run's creation completes a key
      }
      reservation = ((KeyClaim.Claimed) claim).reservationToken();
    }
    try {
      CancelResult result = coordinator.cancel(runId).get(CANCEL_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      switch (result.status()) {
        case FINISHED -> throw ProblemException.of(ProblemType.RUN_FINISHED,
            "run " + runId + " has finished: there is nothing left to cancel");
        case NO_SUCH_RUN -> throw ProblemException.parameter(ProblemType.NOT_FOUND, "id", "there is no run " + runId);
        default -> {
          if (result.status() == CancelResult.Status.CANCELLED) {
            log.info("run {} cancelled over the API: {} pending and {} leased jobs", runId, result.pendingCancelled(),
                result.leases().size());
          }
          ctx.json(ApiViews.run(reads.run(runId)));
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable(runId);
    } catch (TimeoutException e) {
      throw unavailable(runId);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof StoreException s ? s : new IllegalStateException("cancel failed", e.getCause());
    } finally {
      if (reservation != null) {
        release(scope, key, reservation);
      }
    }
  }

  @OpenApi(path = RETRY_ERRORS, methods = HttpMethod.POST, operationId = "retryErrors", tags = "runs",
      summary = "Run a finished run's errored cases again (verdict error, or out of attempts) as new attempts of the same run",
      description = "Every other case keeps its outcome; each retried case is counted once, when its new outcome is"
          + " recorded. A run without errored cases is answered as it is. Asked again while the retry runs: 409.",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = dev.tally.http.dto.RunObject.class)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the run has not finished, or was cancelled",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void retryErrors(Context ctx) {
    long runId = Params.runId(ctx);
    reads.run(runId);
    noFields(ctx, "a retry of a run's errors");
    dev.tally.core.store.RetryResult r = coordinator.retryErrors(runId);
    switch (r.status()) {
      case UNKNOWN_RUN -> throw ProblemException.parameter(ProblemType.NOT_FOUND, "id", "there is no run " + runId);
      case NOT_ENDED -> throw ProblemException.of(ProblemType.RUN_NOT_FINISHED,
          "run " + runId + " has not finished: its own attempts still retry its cases");
      case CANCELLED -> throw ProblemException.of(ProblemType.RUN_FINISHED,
          "run " + runId + " was cancelled: its errors are not retried");
      default -> {
        if (r.status() == dev.tally.core.store.RetryResult.Status.RETRIED) {
          log.info("run {}: retrying {} errored and {} out-of-attempts cases over the API", runId, r.recordedErrors(),
              r.outOfAttempts());
        }
        ctx.json(ApiViews.run(reads.run(runId)));
      }
    }
  }

  @OpenApi(path = RESUME, methods = HttpMethod.POST, operationId = "resumeRun", tags = "runs",
      summary = "Go on with a paused run: raise its caps, or clear its fail-fast pause once the cause is fixed",
      description = "The body may be empty, or {\"maxTokens\": N, \"maxCost\": USD} to raise the run's caps."
          + " A run that is not paused is answered as it is. No response already paid for is asked again.",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = dev.tally.http.dto.RunObject.class)),
          @OpenApiResponse(status = "400", description = "a cap is refused (its place: /maxTokens, /maxCost)",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the run has ended",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void resume(Context ctx) {
    long runId = Params.runId(ctx);
    dev.tally.core.store.RunView run = reads.run(runId);
    java.util.Map<String, String> caps = new java.util.LinkedHashMap<>();
    byte[] bytes = ctx.bodyAsBytes();
    if (bytes.length > 0) {
      JsonNode body = jsonBody(bytes);
      if (body == null || !body.isObject()) {
        throw ProblemException.of(ProblemType.INVALID_REQUEST, "the body must be a JSON object, e.g. {\"maxCost\": 20}");
      }
      for (java.util.Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
        String name = names.next();
        String key = CAP_FIELDS.entrySet().stream().filter(f -> f.getValue().equals(name)).map(java.util.Map.Entry::getKey)
            .findFirst().orElse(null);
        JsonNode v = body.get(name);
        if (key == null) {
          throw ProblemException.field(ProblemType.INVALID_REQUEST, "/" + name,
              "/" + name + ": unknown field '" + name + "'; a resume takes maxTokens and maxCost");
        }
        if (!v.isNumber()) {
          throw ProblemException.field(ProblemType.INVALID_REQUEST, "/" + name, "/" + name + " must be a number, got " + v);
        }
        caps.put(key, v.asText());
      }
      try {
        dev.tally.core.FleetLimits.withCaps(run.spec().evaluator().options(), caps); // before anything is written
      } catch (dev.tally.core.FleetLimits.LimitException e) {
        throw ProblemException.field(ProblemType.INVALID_REQUEST, "/" + CAP_FIELDS.getOrDefault(e.key(), e.key()),
            e.message(SubmitRoutes::apiName));
      }
    }
    if (run.ended()) {
      throw ProblemException.of(ProblemType.RUN_FINISHED, "run " + runId + " has ended; there is nothing to resume");
    }
    dev.tally.core.store.RunView now = coordinator.resume(runId, caps)
        .orElseThrow(() -> ProblemException.parameter(ProblemType.NOT_FOUND, "id", "there is no run " + runId));
    log.info("run {}: resumed over the API{}", runId, caps.isEmpty() ? "" : " with caps " + caps);
    ctx.json(ApiViews.run(now));
  }

  @OpenApi(path = RESCORE, methods = HttpMethod.POST, operationId = "rescoreRun", tags = "runs",
      summary = "Judge a finished run's stored answers again with other scorers, without running any case",
      description = "No evaluator is called (no command run, no model asked). Each recorded case's verdict, score and"
          + " scores.* columns are replaced, the run's counters and scorers follow; a case its evaluator ended in error"
          + " keeps its outcome. The cases are judged a page per store transaction: a reader may see the run part"
          + " rescored until the answer comes, and the same request again finishes one that was cut off.",
      pathParams = @OpenApiParam(name = "id", type = Long.class, required = true),
      requestBody = @OpenApiRequestBody(content = @OpenApiContent(from = dev.tally.http.dto.RescoreRequest.class),
          required = true),
      responses = {
          @OpenApiResponse(status = "200", content = @OpenApiContent(from = dev.tally.http.dto.RescoreObject.class)),
          @OpenApiResponse(status = "400", description = "the body, or a scorer spec (its place: /scorers/N), is refused",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "401", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "404", content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON)),
          @OpenApiResponse(status = "409", description = "the run has not finished, or another rescore of it began meanwhile",
              content = @OpenApiContent(from = dev.tally.http.dto.Problem.class, mimeType = ApiServer.PROBLEM_JSON))})
  void rescore(Context ctx) {
    long runId = Params.runId(ctx);
    reads.run(runId);
    JsonNode body = jsonBody(ctx.bodyAsBytes());
    if (body == null || !body.isObject()) {
      throw ProblemException.of(ProblemType.INVALID_REQUEST,
          "the body must be a JSON object with the scorers, e.g. {\"scorers\": [\"exact:ignore-case\"]}");
    }
    for (java.util.Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!name.equals("scorers")) {
        throw ProblemException.field(ProblemType.INVALID_REQUEST, "/" + name,
            "/" + name + ": unknown field '" + name + "'; a rescore takes scorers");
      }
    }
    dev.tally.core.score.Judge judge = Submission.scorers(body.get("scorers"), 0); // before anything is written
    dev.tally.core.store.RescoreResult r = coordinator.rescore(runId, judge);
    switch (r.status()) {
      case UNKNOWN_RUN -> throw ProblemException.parameter(ProblemType.NOT_FOUND, "id", "there is no run " + runId);
      case NOT_ENDED -> throw ProblemException.of(ProblemType.RUN_NOT_FINISHED,
          "run " + runId + " has not finished: its outcomes are still being recorded; rescore it once it has");
      case SUPERSEDED -> throw ProblemException.of(ProblemType.RESCORE_SUPERSEDED, "run " + runId
          + " was rescored by another request while this one ran; its scorers are the other request's");
      default -> {
        log.info("run {}: rescored over the API with {}: {} cases judged again, {} changed verdict", runId,
            judge.specs(), r.rejudged(), r.verdictsChanged());
        ctx.json(new dev.tally.http.dto.RescoreObject(ApiViews.run(reads.run(runId)), r.rejudged(), r.read() - r.rejudged(),
            r.changed(), r.verdictsChanged()));
      }
    }
  }

  private Upload receive(Context ctx, boolean ndjson) throws IOException {
    try {
      return Upload.receive(ctx.req().getInputStream(), ndjson, ctx.method().name(), ctx.path(), settings.spoolDirectory,
          ndjson ? settings.maxStreamBytes : settings.maxBodyBytes);
    } catch (IOException e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof java.util.concurrent.TimeoutException) {
          // Jetty's idle timeout: the client sent part of the body and went quiet. Nothing was written.
          log.info("an upload stopped arriving ({}); its key is released", t.getMessage());
          throw ProblemException.of(ProblemType.BODY_TIMEOUT, "the body stopped arriving before its end (" + t.getMessage()
              + "); nothing was created: send it again with the same Idempotency-Key");
        }
        if (t instanceof org.eclipse.jetty.io.EofException) {
          // The client closed its side before the declared end (Content-Length, or the last chunk): it may still
          // read the answer (a half-close). Before, a 500 with no body.
          log.info("an upload ended before its declared end ({}); its key is released", t.getMessage());
          throw ProblemException.of(ProblemType.BODY_INCOMPLETE, "the body ended before its declared end ("
              + (ctx.req().getContentLengthLong() >= 0 ? "Content-Length " + ctx.req().getContentLengthLong() : "no last chunk")
              + "); nothing was created: send it whole, with the same Idempotency-Key");
        }
      }
      throw e;
    }
  }

  private void renew(String scope, String key, String reservation, AtomicBoolean held) {
    if (!held.get()) {
      return;
    }
    try {
      if (!store().renewKey(scope, key, reservation, clock.millis() + coordinator.keyHold().toMillis())) {
        held.set(false); // taken over: the completion will find out and refuse to write
      }
    } catch (RuntimeException e) {
      log.warn("cannot renew the hold of an idempotency key in progress (the next renewal tries again): {}", e.toString());
    }
  }

  private void release(String scope, String key, String reservation) {
    try {
      store().releaseKey(scope, key, reservation);
    } catch (RuntimeException e) {
      // Its hold ends by itself: the key is free again at most one hold later.
      log.warn("cannot release an idempotency key (it frees itself when its hold ends): {}", e.toString());
    }
  }

  private static void answer(Context ctx, StoredResponse response, boolean replayed) {
    ctx.status(response.status()).contentType(response.contentType());
    response.headers().forEach(ctx::header);
    if (replayed) {
      ctx.header(REPLAYED, "true");
    }
    ctx.result(response.body());
  }

  private static List<String> headers(Context ctx, String name) {
    return Collections.list(ctx.req().getHeaders(name));
  }

  /**
   * The longest {@code Retry-After} of a 409 for a key in use, in seconds. The first request's hold (up to
   * 30 s, renewed while its body streams) says when a request that died stops holding the key, not when a
   * living one ends, which is most often within a second: a double-click's second send waited out the
   * whole hold before it heard its replay. A retry sends its body again, so not every second either.
   */
  static final long KEY_IN_USE_RETRY_AFTER_MAX_SECONDS = 2;

  /**
   * A small request body as JSON (resume's caps, rescore's scorers), the one reading of them: its faults
   * in words ({@link dev.tally.core.JsonErrors}), as a 400 problem; null for an empty body.
   */
  private JsonNode jsonBody(byte[] bytes) {
    try {
      return json.readTree(bytes);
    } catch (JsonProcessingException e) {
      throw ProblemException.of(ProblemType.MALFORMED_JSON, BODY + ": " + dev.tally.core.JsonErrors.text(e));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e); // a byte array cannot fail to be read
    }
  }

  /**
   * Refuses a body on a route that takes none but an empty object ({@code what}: the action, for the
   * message): a body such a route ignored was taken as understood.
   */
  private void noFields(Context ctx, String what) {
    byte[] bytes = ctx.bodyAsBytes();
    if (bytes.length == 0) {
      return;
    }
    JsonNode body = jsonBody(bytes);
    if (body != null && (!body.isObject() || body.size() > 0)) {
      String first = body.isObject() ? body.fieldNames().next() : null;
      throw first != null ? ProblemException.field(ProblemType.INVALID_REQUEST, "/" + first,
          "/" + first + ": unknown field '" + first + "'; " + what + " takes no fields")
          : ProblemException.of(ProblemType.INVALID_REQUEST, what + " takes no body, or an empty JSON object");
    }
  }

  /** The caps a resume takes: the options map's keys ({@link dev.tally.core.FleetLimits}) and their API fields. */
  static final java.util.Map<String, String> CAP_FIELDS = java.util.Map.of(
      dev.tally.core.FleetLimits.MAX_TOKENS, "maxTokens", dev.tally.core.FleetLimits.MAX_COST, "maxCost");

  /**
   * An option as this API names it in a cap's refusal ({@link dev.tally.core.FleetLimits.LimitException#message}):
   * a cap's field, or the run's evaluator's {@code price}.
   */
  private static String apiName(String key) {
    return key.equals(dev.tally.core.Price.OPTION) ? "a price (the evaluator's \"price\" when the run was submitted)"
        : CAP_FIELDS.getOrDefault(key, key);
  }

  private static ProblemException keyInUse(long holdLeftMillis) {
    long seconds = Math.min(KEY_IN_USE_RETRY_AFTER_MAX_SECONDS, Math.max(1, (holdLeftMillis + 999) / 1000));
    return ProblemException.header(ProblemType.KEY_IN_USE, IdempotencyKeyHeader.NAME,
        "a request with this Idempotency-Key is still being processed; retry with the same key after "
            + seconds + " s").withHeaders(Map.of("Retry-After", Long.toString(seconds)));
  }

  private static ProblemException keyReused(long runId) {
    return ProblemException.header(ProblemType.KEY_REUSED, IdempotencyKeyHeader.NAME,
        "this Idempotency-Key was used for another request (it created run " + runId
            + "); a new submission needs a new key");
  }

  private static ProblemException unavailable(long runId) {
    return ProblemException.of(ProblemType.UNAVAILABLE, "the cancel of run " + runId + " was not committed within "
        + CANCEL_WAIT.toSeconds() + " s; retry it (cancelling twice is one cancel)")
        .withHeaders(Map.of("Retry-After", "5"));
  }

  @Override
  public void close() {
    renewals.shutdownNow();
  }

  /**
   * The cases of an upload as the store pulls them, each checked for the fields its exec command needs;
   * a run without a case is refused at the end.
   */
  private static final class CheckedCases implements CaseSource {
    private final CaseLines lines;
    private final Submission submission;
    private final ObjectMapper json;

    CheckedCases(CaseLines lines, Submission submission, ObjectMapper json) {
      this.lines = lines;
      this.submission = submission;
      this.json = json;
    }

    @Override
    public CaseRecord next() throws CaseSourceException {
      CaseRecord c = lines.next();
      if (c == null) {
        if (lines.count() == 0) {
          throw new CaseSourceException(BODY, 0, "the run has no cases: give at least one");
        }
        return null;
      }
      if (submission.fields() != null) {
        try {
          JsonNode caseObject = json.readTree(c.caseJson());
          var missing = submission.missingField(caseObject);
          if (missing.isPresent()) {
            throw new CaseSourceException(BODY, lines.lineOf(c.position()), CaseFields.missingFieldDetail(c.caseId(),
                caseObject, missing.get(), "the evaluator's " + submission.fields().option()));
          }
        } catch (JsonProcessingException e) {
          throw new IllegalStateException("the case grammar passed a line that is not JSON", e);
        }
      }
      return c;
    }

    @Override
    public String name() {
      return lines.name();
    }

    @Override
    public int lineOf(int position) {
      return lines.lineOf(position);
    }
  }
}
