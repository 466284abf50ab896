package dev.tally.worker.eval;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.TokenUsage;
import dev.tally.core.Verdict;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * {@code model}: asks an OpenAI-compatible Chat Completions endpoint ({@code POST {base-url}/chat/completions},
 * <a href="https://platform.openai.com/docs/api-reference/chat/create">OpenAI's API reference</a>) for each
 * case's answer, never paying twice for a response that reached Tally.
 *
 * <p><b>The request.</b> The messages are the {@code --system} message if given, then either the {@code
 * --prompt} template filled from the case's fields as one user message, or, without a template, the case's
 * {@code input}: a string is one user message, a list of chat messages ({@code {"role", "content"}}) is sent
 * as it is. Then {@code model}, and {@code temperature}, {@code max_tokens}, {@code stop} and {@code seed}
 * when given. The body is sent in canonical form (keys sorted at every level, no white space), and its
 * <b>request digest</b> is the SHA-256 of exactly those bytes, in lower-case hex: the API key travels only in
 * the {@code Authorization} header, so it is in neither. The base URL is not in the digest: a run has one.
 *
 * <p><b>The journal.</b> Before calling, the evaluator asks the attempt's {@link ResponseJournal} for a
 * response to this digest (an earlier attempt of the case paid for it): if there is one it is used, no call
 * is made, and the outcome's fields say {@code "journalled": true}. Otherwise, as soon as a 2xx response's
 * body is read, it is {@linkplain ResponseJournal#record recorded} before anything else (parsing included),
 * and an attempt that cannot journal it ends as a retryable failure.
 *
 * <p><b>The outcome.</b> Verdict {@code pass} (a run's scorers judge the answer and decide), no score, the
 * answer and output the completion's text ({@code choices[0].message.content}); fields {@code usage} ({@code
 * promptTokens}, {@code completionTokens}, {@code totalTokens}), {@code model}, {@code finishReason},
 * {@code journalled}, and with a price {@code costUsd}.
 *
 * <p><b>Errors.</b> 429 and 503 say the endpoint is rate limiting or overloaded: that is the fleet's
 * condition, so the attempt ends at once as {@code RATE_LIMITED} with the {@code Retry-After} (seconds)
 * it asked for; the attempt is not charged and the coordinator backs off the run's whole fleet together.
 * Other 5xx are the endpoint's passing failure: the evaluator waits (a doubling backoff from {@link
 * #FIRST_BACKOFF}, or {@code Retry-After}) and tries again, at most {@link #MAX_RETRIES_PER_ATTEMPT} times
 * and only while the wait ends within the attempt's time budget, then ends the attempt as a retryable
 * {@code EVALUATOR_CRASHED} with the status in the detail. An endpoint that cannot be reached is retryable
 * too. Any other status (401 a bad key, 400 a bad request, a 429 saying {@code insufficient_quota}: no wait
 * clears an empty account) is the case's {@code error} naming the status and the server's message; a 2xx body that is not
 * a Chat Completions response is the case's {@code error}; a request past its timeout (the request timeout,
 * else the attempt's remaining budget) is a retryable {@code TIMEOUT}; cancelling the attempt cancels the
 * request. The API key is removed from every text the evaluator reports, in case a server echoes it.
 *
 * <p>Threading: one instance per run per worker, shared by its slot threads; its HTTP client (made under
 * the instance's lock at the first request) is thread-safe, and the evaluator keeps no other state.
 */
final class ModelEvaluator implements Evaluator {
  /**
   * Retries of a 429 or 5xx within one attempt. A rate limit usually clears within a few {@code
   * Retry-After} intervals; past that the attempt ends and the coordinator's redelivery (with its own
   * backoff and attempt limit) takes over rather than a slot waiting on.
   */
  static final int MAX_RETRIES_PER_ATTEMPT = 3;

  /** The first wait before retrying a 429 or 5xx without {@code Retry-After}; doubled each retry. */
  static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);

  /**
   * Largest response body read: the journal's limit ({@link dev.tally.core.JournalEntry#MAX_RESPONSE_BYTES},
   * its one owner), since every paid response is journalled before it is used; a bigger one is the case's
   * error rather than a response paid for again on every attempt. A completion's JSON is a few KiB (a
   * 16k-token answer about 64 KiB).
   */
  static final int MAX_RESPONSE_BYTES = dev.tally.core.JournalEntry.MAX_RESPONSE_BYTES;

  /** How much of an error body goes into a message: enough for the server's sentence. */
  static final int ERROR_BODY_CHARS = 500;

  /** How long connecting may take: a reachable endpoint accepts in well under a second. */
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

  private static final String REDACTED = "[redacted]";

  private final ModelSettings settings;
  private final Function<String, String> environment;
  /** Made at the first request: a server checking a submission builds evaluators it never runs. */
  private HttpClient client;

  /** An evaluator reading the key from the worker's environment. */
  ModelEvaluator(ModelSettings settings) {
    this(settings, System::getenv);
  }

  /**
   * @param environment the worker's environment variables by name (null for an unset one); tests pass
   *     their own
   */
  ModelEvaluator(ModelSettings settings, Function<String, String> environment) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.environment = Objects.requireNonNull(environment, "environment");
  }

  private synchronized HttpClient client() {
    if (client == null) {
      // HTTP/1.1: a plain-http local server (vLLM, a test's fake) is not asked to upgrade to h2c.
      client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CONNECT_TIMEOUT).build();
    }
    return client;
  }

  /** A case this evaluator cannot make a request of; the case's {@code error}. */
  static final class CaseProblem extends Exception {
    CaseProblem(String message) {
      super(message);
    }
  }

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    String body;
    String digest;
    try {
      ObjectNode request = request(CaseJson.parseObject(ctx.caseJson()));
      body = canonical(request);
      digest = digest(body);
    } catch (IllegalArgumentException | CaseProblem e) {
      return Evaluation.error(e.getMessage(), ctx.elapsedMillis());
    }
    Optional<String> journalled = ctx.journal().find(digest);
    if (journalled.isPresent()) {
      return outcome(journalled.get(), true, "", ctx);
    }
    String key = environment.apply(settings.apiKeyEnv());
    key = key == null || key.isEmpty() ? null : key;
    Duration backoff = FIRST_BACKOFF;
    for (int retry = 0; ; retry++) {
      Exchange exchange = call(body, key, ctx);
      if (exchange.ended() != null) {
        return exchange.ended();
      }
      int status = exchange.status();
      String text = new String(exchange.body(), StandardCharsets.UTF_8);
      if (status >= 200 && status < 300) {
        try {
          ctx.journal().record(digest, text, usage(text));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted while journalling the response",
              ctx.elapsedMillis());
        } catch (ResponseJournal.JournalException e) {
          return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED,
              "the response could not be journalled: " + e.getMessage(), ctx.elapsedMillis());
        }
        return outcome(text, false, key, ctx);
      }
      String said = "HTTP " + status + " from " + settings.endpoint() + ": " + serverMessage(text, key);
      Optional<InfraFailure> limited = rateLimit(status, text, exchange.retryAfter(), said);
      if (limited.isPresent()) {
        return new Evaluation.Failed(limited.get(), ctx.elapsedMillis());
      }
      if (!retryable(status) || text.contains(INSUFFICIENT_QUOTA)) {
        String hint = status == 401 || status == 403
            ? (key == null ? " (no API key was sent: " + settings.apiKeyEnv() + " is not set on this worker)"
                : " (the API key is read from " + settings.apiKeyEnv() + " on the worker)")
            : "";
        return Evaluation.error(said + hint, ctx.elapsedMillis());
      }
      Optional<Duration> retryAfter = retryAfter(exchange.retryAfter());
      Duration wait = retryAfter.orElse(backoff);
      backoff = backoff.multipliedBy(2);
      String detail = said + (exchange.retryAfter() == null ? "" : " (Retry-After: " + exchange.retryAfter() + ")");
      long remainingMillis = ctx.timeout().toMillis() - ctx.elapsedMillis();
      if (retry >= MAX_RETRIES_PER_ATTEMPT || wait.toMillis() >= remainingMillis) {
        return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED,
            detail + "; gave up after " + (retry + 1) + " request" + (retry == 0 ? "" : "s") + " in this attempt",
            ctx.elapsedMillis());
      }
      try {
        if (ctx.awaitCancellation(wait)) {
          return cancelled(ctx);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted while waiting to retry: " + detail,
            ctx.elapsedMillis());
      }
    }
  }

  /** Whether a status is the endpoint's passing trouble (rate limit, overload, failure), worth a retry. */
  static boolean retryable(int status) {
    return status == 429 || status >= 500;
  }

  /**
   * Whether a status says the endpoint is rate limiting or overloaded (429, 503): answered by backing off
   * the run's whole fleet ({@link InfraFailure.Kind#RATE_LIMITED}), not by this slot retrying.
   */
  static boolean rateLimited(int status) {
    return status == 429 || status == 503;
  }

  /**
   * How an attempt ends when an endpoint's answer says it is rate limiting or overloaded: the fleet's
   * condition, not this slot's, so the attempt ends at once as {@code RATE_LIMITED}, uncharged, with the
   * {@code Retry-After} it asked (delta-seconds, at most {@link InfraFailure#MAX_RETRY_AFTER_MILLIS}), and
   * the coordinator backs the whole run off together ({@code RunGovernor}). The one reading, for the
   * evaluator's calls and a model-graded scorer's ({@link ChatGrader}).
   *
   * @param status the answer's HTTP status
   * @param body its body (a 429 saying {@link #INSUFFICIENT_QUOTA} is not a rate limit: no wait clears it)
   * @param retryAfterHeader its {@code Retry-After}, or null
   * @param said the sentence naming the status and the endpoint, for the attempt's history
   * @return the failure, or empty if the answer is not a rate limit
   */
  static Optional<InfraFailure> rateLimit(int status, String body, String retryAfterHeader, String said) {
    if (!rateLimited(status) || body.contains(INSUFFICIENT_QUOTA)) {
      return Optional.empty();
    }
    long wait = Math.min(retryAfter(retryAfterHeader).map(Duration::toMillis).orElse(0L),
        InfraFailure.MAX_RETRY_AFTER_MILLIS);
    return Optional.of(new InfraFailure(InfraFailure.Kind.RATE_LIMITED,
        said + (retryAfterHeader == null ? "" : " (Retry-After: " + retryAfterHeader + ")"), wait));
  }

  /**
   * OpenAI's error code for an account out of credit, sent with a 429: no wait clears it, so it is the
   * case's error (and a run whose first cases all say it pauses, rather than retrying forever).
   */
  static final String INSUFFICIENT_QUOTA = "insufficient_quota";

  /**
   * A {@code Retry-After} header's delay ({@link dev.tally.core.RetryAfter}, the one reading: seconds, or an
   * HTTP date from now); anything else gives none and the backoff applies.
   */
  static Optional<Duration> retryAfter(String header) {
    return dev.tally.core.RetryAfter.parse(header, java.time.Instant.now());
  }

  /** How one request ended: a response (status, bounded body, Retry-After) or an evaluation that ends the attempt. */
  private record Exchange(int status, byte[] body, String retryAfter, Evaluation ended) {}

  private Exchange call(String body, String key, EvalContext ctx) {
    long remainingMillis = ctx.timeout().toMillis() - ctx.elapsedMillis();
    if (remainingMillis <= 0) {
      return new Exchange(0, null, null, timeout("the attempt's time budget of " + ctx.timeout().toMillis()
          + " ms ran out before the request", ctx));
    }
    Duration limit = Duration.ofMillis(remainingMillis);
    if (settings.requestTimeout() != null && settings.requestTimeout().compareTo(limit) < 0) {
      limit = settings.requestTimeout();
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(settings.endpoint())
        .timeout(limit)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (key != null) {
      request.header("Authorization", "Bearer " + key);
    }
    CompletableFuture<HttpResponse<byte[]>> future =
        client().sendAsync(request.build(), info -> new BoundedBody(MAX_RESPONSE_BYTES));
    Runnable unregister = ctx.onCancel(() -> future.cancel(true));
    try {
      // The request's own timeout covers waiting for the headers; this one covers the body as well.
      HttpResponse<byte[]> response = future.get(limit.toMillis(), TimeUnit.MILLISECONDS);
      return new Exchange(response.statusCode(), response.body(),
          response.headers().firstValue("Retry-After").orElse(null), null);
    } catch (CancellationException e) {
      return new Exchange(0, null, null, cancelled(ctx));
    } catch (TimeoutException e) {
      future.cancel(true);
      return new Exchange(0, null, null, timeout("no response within " + limit.toMillis() + " ms", ctx));
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      return new Exchange(0, null, null, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED,
          "interrupted during the request", ctx.elapsedMillis()));
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (ctx.cancelled()) {
        return new Exchange(0, null, null, cancelled(ctx));
      }
      if (cause instanceof HttpTimeoutException) {
        return new Exchange(0, null, null, timeout("no response within " + limit.toMillis() + " ms", ctx));
      }
      if (cause instanceof ResponseTooLargeException) {
        return new Exchange(0, null, null, Evaluation.error("the response from " + settings.endpoint()
            + " is larger than " + MAX_RESPONSE_BYTES + " bytes", ctx.elapsedMillis()));
      }
      return new Exchange(0, null, null, Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED,
          "cannot reach " + settings.endpoint() + ": " + redact(String.valueOf(cause), key), ctx.elapsedMillis()));
    } finally {
      unregister.run();
    }
  }

  private static Evaluation timeout(String why, EvalContext ctx) {
    return Evaluation.failed(InfraFailure.Kind.TIMEOUT, why, ctx.elapsedMillis());
  }

  private static Evaluation cancelled(EvalContext ctx) {
    return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled: " + ctx.cancelReason(),
        ctx.elapsedMillis());
  }

  /**
   * The Chat Completions request for a case (see the class comment), not yet canonical.
   *
   * @throws CaseProblem if the case lacks a field the prompt names, has no {@code input} (without a prompt),
   *     or its {@code input} is neither a string nor a list of chat messages
   */
  ObjectNode request(JsonNode caseObject) throws CaseProblem {
    ObjectNode r = CaseJson.MAPPER.createObjectNode();
    r.put("model", settings.model());
    ArrayNode messages = r.putArray("messages");
    if (settings.system() != null) {
      messages.add(message("system", settings.system()));
    }
    if (settings.prompt() != null) {
      try {
        messages.add(message("user", settings.prompt().fill(caseObject)));
      } catch (CommandTemplate.MissingFieldException e) {
        throw new CaseProblem("case has no field '" + e.field() + "' (the prompt uses {" + e.field() + "})");
      }
    } else {
      JsonNode input = caseObject.get("input");
      if (input == null || input.isNull()) {
        throw new CaseProblem("case has no input, and the run has no --prompt template to make one from its fields");
      }
      if (input.isTextual()) {
        messages.add(message("user", input.textValue()));
      } else if (input.isArray() && !input.isEmpty()) {
        for (int i = 0; i < input.size(); i++) {
          JsonNode m = input.get(i);
          if (!m.isObject() || !m.path("role").isTextual() || !m.has("content")) {
            throw new CaseProblem("case field input[" + i + "] is not a chat message {\"role\": ..., \"content\": ...}: " + m);
          }
          messages.add(m);
        }
      } else {
        throw new CaseProblem("case field input must be a string or a non-empty list of chat messages, got "
            + input.getNodeType());
      }
    }
    if (settings.temperature() != null) {
      r.put("temperature", settings.temperature());
    }
    if (settings.maxCompletionTokens() != null) {
      r.put("max_tokens", settings.maxCompletionTokens());
    }
    if (!settings.stop().isEmpty()) {
      settings.stop().forEach(r.putArray("stop")::add);
    }
    if (settings.seed() != null) {
      r.put("seed", settings.seed());
    }
    return r;
  }

  private static ObjectNode message(String role, String content) {
    ObjectNode m = CaseJson.MAPPER.createObjectNode();
    m.put("role", role);
    m.put("content", content);
    return m;
  }

  /** A JSON value's canonical text: object keys sorted (by UTF-16 code units) at every level, no white space. */
  static String canonical(JsonNode node) {
    try {
      return CaseJson.MAPPER.writeValueAsString(sorted(node));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a JSON tree cannot fail to serialize", e);
    }
  }

  private static JsonNode sorted(JsonNode node) {
    if (node.isObject()) {
      TreeMap<String, JsonNode> fields = new TreeMap<>();
      for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
        String name = names.next();
        fields.put(name, sorted(node.get(name)));
      }
      ObjectNode out = CaseJson.MAPPER.createObjectNode();
      fields.forEach(out::set);
      return out;
    }
    if (node.isArray()) {
      ArrayNode out = CaseJson.MAPPER.createArrayNode();
      node.forEach(e -> out.add(sorted(e)));
      return out;
    }
    return node;
  }

  /** SHA-256 of the text's UTF-8 bytes, lower-case hex. */
  static String digest(String canonical) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  /** The outcome of a 2xx response's body (journalled or just received); a body not in the documented shape is the case's error. */
  private Evaluation outcome(String body, boolean journalled, String key, EvalContext ctx) {
    JsonNode r;
    try {
      r = CaseJson.MAPPER.readTree(body);
    } catch (JsonProcessingException e) {
      r = null;
    }
    JsonNode message = r == null ? null : r.path("choices").path(0).path("message");
    JsonNode content = message == null ? null : message.get("content");
    if (content == null || !content.isTextual()) {
      String why = r == null ? "it is not JSON"
          : !r.path("choices").path(0).isObject() ? "it has no choices[0]"
          : "choices[0].message.content is not a string (finish_reason "
              + r.path("choices").path(0).path("finish_reason") + ")";
      return Evaluation.error("the response from " + settings.endpoint() + " is not a Chat Completions response: "
          + why + "; it begins: " + head(redact(body, key)), ctx.elapsedMillis());
    }
    String answer = content.textValue();
    ObjectNode fields = CaseJson.MAPPER.createObjectNode();
    JsonNode usage = r.path("usage");
    TokenUsage used = usage(r);
    long prompt = used.promptTokens();
    long completion = used.completionTokens();
    if (usage.isObject()) {
      ObjectNode u = fields.putObject("usage");
      u.put("promptTokens", prompt);
      u.put("completionTokens", completion);
      u.put("totalTokens", usage.path("total_tokens").asLong(prompt + completion));
    }
    if (r.path("model").isTextual()) {
      fields.put("model", r.path("model").textValue());
    }
    JsonNode finish = r.path("choices").path(0).path("finish_reason");
    if (finish.isTextual()) {
      fields.put("finishReason", finish.textValue());
    }
    if (settings.price() != null && usage.isObject()) {
      fields.put("costUsd", settings.price().costUsd(prompt, completion));
    }
    fields.put("journalled", journalled);
    String tail = answer.length() <= ExecEvaluator.OUTPUT_TAIL_LIMIT ? answer
        : answer.substring(answer.length() - ExecEvaluator.OUTPUT_TAIL_LIMIT);
    return new Evaluation.Finished(new Outcome(Verdict.PASS, null, tail, ctx.elapsedMillis(), answer, fields.toString(),
        null, ""));
  }

  /**
   * The tokens a Chat Completions body reports ({@code usage.prompt_tokens}, {@code
   * usage.completion_tokens}); none when it is not JSON or reports none, and counts out of {@link
   * TokenUsage}'s range are read as none rather than failing a paid response. The one reading of a
   * response's usage: the journal entry (the run's spend) and the case's fields both come from it.
   */
  static TokenUsage usage(String body) {
    try {
      return usage(CaseJson.MAPPER.readTree(body));
    } catch (JsonProcessingException e) {
      return TokenUsage.NONE;
    }
  }

  private static TokenUsage usage(JsonNode response) {
    JsonNode u = response == null ? null : response.path("usage");
    if (u == null || !u.isObject()) {
      return TokenUsage.NONE;
    }
    long prompt = u.path("prompt_tokens").asLong(0);
    long completion = u.path("completion_tokens").asLong(0);
    try {
      return new TokenUsage(prompt, completion);
    } catch (IllegalArgumentException e) {
      return TokenUsage.NONE;
    }
  }

  /** The server's sentence: an OpenAI-style {@code error.message}, else the body's head; the key removed. */
  private static String serverMessage(String body, String key) {
    try {
      JsonNode e = CaseJson.MAPPER.readTree(body);
      if (e != null && e.path("error").path("message").isTextual()) {
        return head(redact(e.path("error").path("message").textValue(), key));
      }
      if (e != null && e.path("error").isTextual()) {
        return head(redact(e.path("error").textValue(), key));
      }
    } catch (JsonProcessingException ignored) {
      // not JSON: its head is the message
    }
    String text = body.strip();
    return text.isEmpty() ? "(empty body)" : head(redact(text, key));
  }

  private static String head(String text) {
    return text.length() <= ERROR_BODY_CHARS ? text : text.substring(0, ERROR_BODY_CHARS) + "...";
  }

  /** {@code text} with every occurrence of the key replaced: a server may quote the key it refused. */
  static String redact(String text, String key) {
    return key == null || key.isEmpty() ? text : text.replace(key, REDACTED);
  }

  /** A body longer than the limit. */
  static final class ResponseTooLargeException extends IOException {
    ResponseTooLargeException(int limit) {
      super("response body larger than " + limit + " bytes");
    }
  }

  /**
   * Collects a response body of at most {@code limit} bytes; a longer one is cancelled and fails with {@link
   * ResponseTooLargeException}, so a runaway server cannot fill the worker's memory. Called by the HTTP
   * client's threads, one signal at a time (the Flow contract), so its state needs no lock.
   */
  static final class BoundedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final int limit;
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private final List<ByteBuffer> buffers = new ArrayList<>();
    private Flow.Subscription subscription;
    private int size;

    BoundedBody(int limit) {
      this.limit = limit;
    }

    @Override
    public CompletionStage<byte[]> getBody() {
      return result;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (result.isDone()) {
        return;
      }
      for (ByteBuffer b : items) {
        size += b.remaining();
        buffers.add(b);
      }
      if (size > limit) {
        buffers.clear();
        subscription.cancel();
        result.completeExceptionally(new ResponseTooLargeException(limit));
      }
    }

    @Override
    public void onError(Throwable t) {
      result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      byte[] out = new byte[size];
      int at = 0;
      for (ByteBuffer b : buffers) {
        int n = b.remaining();
        b.get(out, at, n);
        at += n;
      }
      result.complete(out);
    }
  }
}
