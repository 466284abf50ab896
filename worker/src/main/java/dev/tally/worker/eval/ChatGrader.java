package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.score.Grader;
import dev.tally.core.score.ModelGradedScorer;
import dev.tally.core.score.ScoringException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;

/**
 * The grader a model-graded scorer asks on a worker: one Chat Completions request per grading, at
 * temperature 0, journalled like the model evaluator's own calls (in the same case's journal, under the
 * request's digest), so a redelivered, resumed or retried case never pays its grader twice.
 *
 * <p>Its endpoint's answers are read by {@link ModelEvaluator}'s rules, which this class calls: 429 and 503
 * end the attempt as rate limited ({@link Grader.Unavailable}, the fleet backs off), another 5xx or an
 * unreachable endpoint ends it retryably, any other status is the column's error naming it; the key is read
 * from the scorer's {@code api-key-env} on this worker and sent only in the {@code Authorization} header.
 *
 * <p>Thread-safety: one per attempt (it holds the attempt's context); its client is shared and thread-safe.
 */
final class ChatGrader implements Grader {
  /** Shared by every grading on this worker: an HTTP client is thread-safe and costly to make. */
  private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(ModelEvaluator.CONNECT_TIMEOUT).build();

  private final EvalContext ctx;
  private final Function<String, String> environment;

  ChatGrader(EvalContext ctx, Function<String, String> environment) {
    this.ctx = ctx;
    this.environment = environment;
  }

  @Override
  public String reply(ModelGradedScorer scorer, String prompt) {
    ObjectNode request = CaseJson.MAPPER.createObjectNode();
    request.put("model", scorer.model());
    request.putArray("messages").addObject().put("role", "user").put("content", prompt);
    request.put("temperature", 0);
    String body = ModelEvaluator.canonical(request);
    String digest = ModelEvaluator.digest(body);
    Optional<String> journalled = ctx.journal().find(digest);
    if (journalled.isPresent()) {
      return content(scorer, journalled.get());
    }
    String key = environment.apply(scorer.apiKeyEnv());
    URI endpoint = dev.tally.core.ChatEndpoint.chatCompletions(scorer.baseUrl());
    long leftMillis = ctx.timeout().toMillis() - ctx.elapsedMillis();
    if (leftMillis <= 0) {
      throw new Grader.Unavailable(new InfraFailure(InfraFailure.Kind.TIMEOUT,
          "the attempt's time budget ran out before its grader " + scorer.name() + " was asked"));
    }
    HttpRequest.Builder r = HttpRequest.newBuilder(endpoint).timeout(Duration.ofMillis(leftMillis))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (key != null && !key.isEmpty()) {
      r.header("Authorization", "Bearer " + key);
    }
    HttpResponse<java.io.InputStream> response;
    String text;
    try {
      response = CLIENT.send(r.build(), HttpResponse.BodyHandlers.ofInputStream());
      try (java.io.InputStream in = response.body()) {
        byte[] bytes = in.readNBytes(ModelEvaluator.MAX_RESPONSE_BYTES + 1); // bounded, as the evaluator's own
        text = new String(bytes, StandardCharsets.UTF_8);
      }
    } catch (IOException e) {
      throw new Grader.Unavailable(new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED,
          "grader " + scorer.name() + ": cannot reach " + endpoint + ": " + ModelEvaluator.redact(e.toString(), key)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Grader.Unavailable(new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED,
          "grader " + scorer.name() + ": interrupted"));
    }
    int status = response.statusCode();
    String said = "grader " + scorer.name() + ": HTTP " + status + " from " + endpoint;
    if (status >= 200 && status < 300) {
      if (dev.tally.core.JournalEntry.utf8Length(text) > ModelEvaluator.MAX_RESPONSE_BYTES) {
        throw new ScoringException(said + ": the reply is larger than " + ModelEvaluator.MAX_RESPONSE_BYTES + " bytes");
      }
      try {
        ctx.journal().record(digest, text, ModelEvaluator.usage(text));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Grader.Unavailable(new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED,
            "interrupted while journalling the grader's reply"));
      } catch (ResponseJournal.JournalException e) {
        throw new Grader.Unavailable(new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED,
            "the grader's reply could not be journalled: " + e.getMessage()));
      }
      return content(scorer, text);
    }
    String message = said + ": " + ModelEvaluator.redact(head(text), key);
    Optional<InfraFailure> limited = ModelEvaluator.rateLimit(status, text,
        response.headers().firstValue("Retry-After").orElse(null), message);
    if (limited.isPresent()) {
      throw new Grader.Unavailable(limited.get());
    }
    if (status >= 500) {
      throw new Grader.Unavailable(new InfraFailure(InfraFailure.Kind.EVALUATOR_CRASHED, message));
    }
    throw new ScoringException(message);
  }

  /** The reply's text ({@code choices[0].message.content}). */
  private static String content(ModelGradedScorer scorer, String body) {
    try {
      JsonNode content = CaseJson.MAPPER.readTree(body).path("choices").path(0).path("message").path("content");
      if (content.isTextual()) {
        return content.textValue();
      }
    } catch (IOException e) {
      // said below
    }
    throw new ScoringException("grader " + scorer.name() + ": the reply is not a Chat Completions response: "
        + head(body));
  }

  private static String head(String text) {
    return text.length() <= ModelEvaluator.ERROR_BODY_CHARS ? text : text.substring(0, ModelEvaluator.ERROR_BODY_CHARS) + "…";
  }
}
