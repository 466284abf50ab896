package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Ticker;
import dev.tally.core.Verdict;
import dev.tally.core.score.Scorers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The model evaluator against {@link FakeChatServer}: the request it builds and its digest, the prompt
 * template, the journal (used without a call; recorded before the outcome), and how each kind of answer maps
 * onto an outcome or a retryable failure.
 */
class ModelEvaluatorTest {
  /** How long a test waits for the fake server's handlers to count the answers a client has read. */
  private static final Duration SETTLE = Duration.ofSeconds(10);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String KEY = "sk-test-7f3a9c-secret";
  private static final String KEY_ENV = "FAKE_MODEL_KEY";

  private FakeChatServer server;

  @BeforeEach
  void start() throws Exception {
    server = FakeChatServer.start(KEY);
  }

  @AfterEach
  void stop() {
    server.close();
  }

  /** A journal in memory that remembers what it was asked and told, in order. */
  static final class MemoryJournal implements ResponseJournal {
    final Map<String, String> responses = new HashMap<>();
    final List<String> calls = new ArrayList<>();
    ResponseJournal.JournalException failure;

    @Override
    public synchronized Optional<String> find(String requestDigest) {
      calls.add("find " + requestDigest);
      return Optional.ofNullable(responses.get(requestDigest));
    }

    @Override
    public synchronized void record(String requestDigest, String response, dev.tally.core.TokenUsage usage)
        throws JournalException {
      calls.add("record " + requestDigest);
      if (failure != null) {
        throw failure;
      }
      responses.put(requestDigest, response);
    }
  }

  private Map<String, String> options(String... more) {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("base-url", server.baseUrl());
    o.put("model", "m1");
    o.put("api-key-env", KEY_ENV);
    for (int i = 0; i < more.length; i += 2) {
      o.put(more[i], more[i + 1]);
    }
    return o;
  }

  private ModelEvaluator evaluator(Map<String, String> options, String key) {
    Map<String, String> env = new HashMap<>();
    env.put(KEY_ENV, key);
    return new ModelEvaluator(ModelSettings.parse(options), env::get);
  }

  private ModelEvaluator evaluator(String... more) {
    return evaluator(options(more), KEY);
  }

  private static EvalContext context(String caseJson, MemoryJournal journal, Duration timeout) {
    return new EvalContext("c1", caseJson, timeout, Ticker.system()).withJournal(journal);
  }

  private static EvalContext context(String caseJson, MemoryJournal journal) {
    return context(caseJson, journal, Duration.ofSeconds(30));
  }

  @Test
  void aModelGradedScorerAsksItsGraderOnceJournalledAndARedeliveryPaysNeitherCallAgain() throws Exception {
    Map<String, String> env = Map.of(KEY_ENV, KEY);
    String spec = "model-graded:model=grader-1,base-url=" + server.baseUrl() + ",api-key-env=" + KEY_ENV;
    Evaluator scored = new ScoringEvaluator(new ModelEvaluator(ModelSettings.parse(options()), env::get),
        dev.tally.core.score.Judge.of(List.of(spec)), env::get);
    MemoryJournal journal = new MemoryJournal();
    Outcome first = finished(scored.evaluate(context("{\"id\": \"c1\", \"input\": \"What is 6 - 9?\", \"target\": \"-3\"}", journal)));
    assertThat(first.verdict()).isEqualTo(dev.tally.core.Verdict.PASS);
    assertThat(first.fieldsJson()).contains("\"model-graded\":{\"value\":1.0,\"passed\":true,\"extracted\":\"C\"");
    assertThat(server.billedOnceSettled(SETTLE)).as("the answer and its grading").isEqualTo(2);
    assertThat(journal.responses).hasSize(2);
    assertThat(server.bodies().get(1)).contains("\"model\":\"grader-1\"").contains("[Answer to grade]\\n-3")
        .contains("\"temperature\":0");

    // The same case again (a redelivery): both calls come from the journal.
    Outcome again = finished(scored.evaluate(context("{\"id\": \"c1\", \"input\": \"What is 6 - 9?\", \"target\": \"-3\"}", journal)));
    assertThat(again.verdict()).isEqualTo(dev.tally.core.Verdict.PASS);
    assertThat(server.billedOnceSettled(SETTLE)).as("nothing paid twice").isEqualTo(2);

    // A grader that rate limits ends the attempt, uncharged, with its wait: the answer is journalled, the
    // grading (forgotten here) is asked again and refused.
    String gradingDigest = journal.calls.stream().filter(c -> c.startsWith("record ")).skip(1).findFirst().orElseThrow()
        .substring("record ".length());
    journal.responses.remove(gradingDigest);
    server.failNext(1, 429, "3");
    InfraFailure limited = failed(scored.evaluate(context("{\"id\": \"c1\", \"input\": \"What is 6 - 9?\", \"target\": \"-3\"}", journal)));
    assertThat(limited.kind()).isEqualTo(InfraFailure.Kind.RATE_LIMITED);
    assertThat(limited.retryAfterMillis()).isEqualTo(3_000);
    assertThat(limited.detail()).startsWith("grader model-graded: HTTP 429 from ");
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(2);
  }

  private static Outcome finished(Evaluation e) {
    assertThat(e).isInstanceOf(Evaluation.Finished.class);
    return ((Evaluation.Finished) e).outcome();
  }

  private static InfraFailure failed(Evaluation e) {
    assertThat(e).isInstanceOf(Evaluation.Failed.class);
    return ((Evaluation.Failed) e).failure();
  }

  @Test
  void aStringInputIsOneUserMessageAfterTheSystemMessageWithTheSettingsInSnakeCase() throws Exception {
    ModelEvaluator e = evaluator("system", "Answer with the number only.", "temperature", "0", "max-completion-tokens", "16",
        "stop", ModelSettings.stopValue(List.of("\n", "END")), "seed", "7");
    JsonNode r = e.request(JSON.readTree("{\"id\": \"a\", \"input\": \"What is 1 + 2?\"}"));
    assertThat(r.toString()).isEqualTo("{\"model\":\"m1\",\"messages\":[{\"role\":\"system\",\"content\":\"Answer with the number only.\"},"
        + "{\"role\":\"user\",\"content\":\"What is 1 + 2?\"}],\"temperature\":0.0,\"max_tokens\":16,\"stop\":[\"\\n\",\"END\"],\"seed\":7}");
  }

  @Test
  void aListOfChatMessagesIsSentAsItIs() throws Exception {
    String messages = "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"What is 2 x 3?\",\"name\":\"u\"}]";
    JsonNode r = evaluator().request(JSON.readTree("{\"id\": \"a\", \"input\": " + messages + "}"));
    assertThat(r.get("messages")).isEqualTo(JSON.readTree(messages));
  }

  @Test
  void thePromptTemplateIsFilledFromTheCaseFieldsAndAMissingFieldIsTheCasesErrorNamingIt() throws Exception {
    ModelEvaluator e = evaluator("prompt", "Q: {question} ({n} {{braces}})");
    JsonNode r = e.request(JSON.readTree("{\"id\": \"a\", \"question\": \"What is 1 + 2?\", \"n\": 3, \"input\": \"ignored\"}"));
    assertThat(r.get("messages").toString()).isEqualTo("[{\"role\":\"user\",\"content\":\"Q: What is 1 + 2? (3 {braces})\"}]");

    Outcome o = finished(e.evaluate(context("{\"id\": \"c1\", \"n\": 3}", new MemoryJournal())));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).isEqualTo("case has no field 'question' (the prompt uses {question})");
    assertThat(server.requests()).isZero();
  }

  @Test
  void thePromptTemplateTakesFieldPathsAsTheCommandTemplateDoes() throws Exception {
    ModelEvaluator e = evaluator("prompt", "Q: {q.text} in {q.langs.0}");
    JsonNode r = e.request(JSON.readTree("{\"id\": \"a\", \"q\": {\"text\": \"2 + 2?\", \"langs\": [\"fr\", \"en\"]}}"));
    assertThat(r.get("messages").toString()).isEqualTo("[{\"role\":\"user\",\"content\":\"Q: 2 + 2? in fr\"}]");

    Outcome o = finished(e.evaluate(context("{\"id\": \"c1\", \"q\": {\"text\": \"x\"}}", new MemoryJournal())));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).isEqualTo("case has no field 'q.langs.0' (the prompt uses {q.langs.0})");
    assertThat(server.requests()).isZero();
  }

  @Test
  void aCaseWithoutAUsableInputIsItsErrorWithoutACall() {
    assertThat(finished(evaluator().evaluate(context("{\"id\": \"c1\"}", new MemoryJournal()))).outputTail())
        .contains("case has no input");
    assertThat(finished(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": 3}", new MemoryJournal()))).outputTail())
        .contains("input must be a string or a non-empty list of chat messages");
    assertThat(finished(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": [{\"content\": \"x\"}]}", new MemoryJournal())))
        .outputTail()).contains("input[0] is not a chat message");
    assertThat(server.requests()).isZero();
  }

  @Test
  void theDigestIsTheSha256OfTheCanonicalBodySentWhichHoldsNoKey() throws Exception {
    MemoryJournal journal = new MemoryJournal();
    finished(evaluator("temperature", "0.5").evaluate(context("{\"id\": \"c1\", \"input\": \"What is 1 + 2?\"}", journal)));
    String sent = server.bodies().get(0);
    assertThat(sent).isEqualTo("{\"messages\":[{\"content\":\"What is 1 + 2?\",\"role\":\"user\"}],\"model\":\"m1\",\"temperature\":0.5}");
    assertThat(sent).doesNotContain(KEY);
    String digest = ModelEvaluator.digest(sent);
    assertThat(digest).hasSize(64).matches("[0-9a-f]+");
    assertThat(journal.calls).containsExactly("find " + digest, "record " + digest);
    // key order in the case does not change the request
    assertThat(ModelEvaluator.canonical(JSON.readTree("{\"b\": {\"y\": 1, \"x\": [2, {\"d\": 0, \"c\": 1}]}, \"a\": \"s\"}")))
        .isEqualTo("{\"a\":\"s\",\"b\":{\"x\":[2,{\"c\":1,\"d\":0}],\"y\":1}}");
  }

  @Test
  void aCompletionPassesWithItsTextAsTheAnswerAndItsUsageModelFinishReasonAndCostAsFields() throws Exception {
    MemoryJournal journal = new MemoryJournal();
    Outcome o = finished(evaluator("price", "2,10").evaluate(context("{\"id\": \"c1\", \"input\": \"What is 38 + 4?\"}", journal)));
    assertThat(o.verdict()).isEqualTo(Verdict.PASS);
    assertThat(o.score()).isNull();
    assertThat(o.answer()).isEqualTo("42");
    assertThat(o.outputTail()).isEqualTo("42");
    JsonNode fields = JSON.readTree(o.fieldsJson());
    assertThat(fields.get("usage").toString()).isEqualTo("{\"promptTokens\":5,\"completionTokens\":1,\"totalTokens\":6}");
    assertThat(fields.get("model").asText()).isEqualTo("m1-fake");
    assertThat(fields.get("finishReason").asText()).isEqualTo("stop");
    assertThat(fields.get("costUsd").asDouble()).isEqualTo((5 * 2 + 1 * 10) / 1e6);
    assertThat(fields.get("journalled").asBoolean()).isFalse();
    assertThat(journal.responses).hasSize(1);
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(1);
  }

  @Test
  void aJournalledResponseIsUsedWithoutACall() throws Exception {
    MemoryJournal journal = new MemoryJournal();
    String caseJson = "{\"id\": \"c1\", \"input\": \"What is 6 * 7?\"}";
    Outcome first = finished(evaluator().evaluate(context(caseJson, journal)));
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(1);

    // a later attempt of the same case (a redelivery, a resumed run): the same request, no second call
    Outcome again = finished(evaluator().evaluate(context(caseJson, journal)));
    assertThat(server.requests()).isEqualTo(1);
    assertThat(again.answer()).isEqualTo(first.answer()).isEqualTo("42");
    assertThat(again.fieldsJson()).contains("\"journalled\":true");
    assertThat(journal.calls).hasSize(3).last().asString().startsWith("find ");

    // a changed setting is a new request, paid for
    finished(evaluator("temperature", "1").evaluate(context(caseJson, journal)));
    assertThat(server.billedOnceSettled(SETTLE)).isEqualTo(2);
  }

  @Test
  void scorersJudgeTheCompletion() {
    assertThat(EvaluatorFactory.create("model", withScorer(options(), "numeric"))).isInstanceOf(ScoringEvaluator.class);
    Map<String, String> env = new HashMap<>(Map.of(KEY_ENV, KEY));
    Evaluator scored = new ScoringEvaluator(new ModelEvaluator(ModelSettings.parse(options()), env::get), dev.tally.core.score.Judge.of(List.of("numeric")));
    assertThat(finished(scored.evaluate(context("{\"id\": \"c1\", \"input\": \"What is 38 + 4?\", \"target\": \"42\"}",
        new MemoryJournal()))).verdict()).isEqualTo(Verdict.PASS);
    assertThat(finished(scored.evaluate(context("{\"id\": \"c1\", \"input\": \"What is 38 + 4?\", \"target\": \"41\"}",
        new MemoryJournal()))).verdict()).isEqualTo(Verdict.FAIL);
  }

  private static Map<String, String> withScorer(Map<String, String> options, String spec) {
    Map<String, String> o = new LinkedHashMap<>(options);
    o.put(Scorers.OPTION, Scorers.optionValue(List.of(spec)));
    return o;
  }

  @Test
  void aRateLimitEndsTheAttemptAtOnceUnchargedWithTheWaitItAskedFor() throws Exception {
    server.failNext(1, 429, "2");
    InfraFailure f = failed(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"What is 1 + 1?\"}", new MemoryJournal())));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.RATE_LIMITED);
    assertThat(f.retryAfterMillis()).isEqualTo(2_000);
    assertThat(f.detail()).contains("HTTP 429").contains("Rate limit reached").contains("Retry-After: 2");
    assertThat(server.requests()).as("the fleet backs off, not this slot: one request").isEqualTo(1);
    assertThat(server.billedOnceSettled(SETTLE)).isZero();
    assertThat(dev.tally.core.RedeliveryPolicy.chargesAttempt(f.kind())).isFalse();
  }

  @Test
  void anOverloadedEndpointWithoutRetryAfterIsRateLimitedWithNoWait() {
    server.failNext(1, 503, null);
    InfraFailure f = failed(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"What is 1 + 1?\"}", new MemoryJournal())));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.RATE_LIMITED);
    assertThat(f.retryAfterMillis()).isZero();
    assertThat(f.detail()).contains("HTTP 503");
  }

  @Test
  void aServerErrorWhoseRetryAfterIsBeyondTheAttemptsBudgetEndsTheAttemptAtOnce() {
    server.failNext(1, 502, "3600");
    InfraFailure f = failed(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"What is 1 + 1?\"}", new MemoryJournal(),
        Duration.ofSeconds(20))));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(f.detail()).contains("HTTP 502").contains("Retry-After: 3600").contains("gave up after 1 request in");
  }

  @Test
  void aServerErrorIsRetriedWithBackoff() {
    server.failNext(1, 500, null);
    Outcome o = finished(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"What is 5 - 7?\"}", new MemoryJournal())));
    assertThat(o.answer()).isEqualTo("-2");
    assertThat(server.requests()).isEqualTo(2);
  }

  @Test
  void aBadKeyIsTheCasesErrorNamingTheStatusAndTheServersMessageWithoutTheKey() throws Exception {
    ModelEvaluator e = evaluator(options(), "sk-wrong-key-123456");
    Outcome o = finished(e.evaluate(context("{\"id\": \"c1\", \"input\": \"What is 1 + 1?\"}", new MemoryJournal())));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).startsWith("HTTP 401 from " + server.baseUrl() + "/chat/completions: Incorrect API key provided: [redacted].")
        .contains("(the API key is read from " + KEY_ENV + " on the worker)")
        .doesNotContain("sk-wrong-key-123456");

    Outcome unset = finished(evaluator(options(), null).evaluate(context("{\"id\": \"c1\", \"input\": \"x\"}", new MemoryJournal())));
    assertThat(unset.outputTail()).contains("HTTP 401").contains("no API key was sent: " + KEY_ENV + " is not set on this worker");
    assertThat(server.billedOnceSettled(SETTLE)).isZero();
  }

  @Test
  void aBadRequestIsTheCasesError() {
    server.failNext(1, 400, null);
    Outcome o = finished(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"x\"}", new MemoryJournal())));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).startsWith("HTTP 400 from ");
    assertThat(server.requests()).isEqualTo(1);
  }

  @Test
  void aResponseThatIsNotACompletionIsJournalledThenTheCasesError() {
    server.answerWith("{\"object\": \"list\", \"data\": []}");
    MemoryJournal journal = new MemoryJournal();
    Outcome o = finished(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"x\"}", journal)));
    assertThat(o.verdict()).isEqualTo(Verdict.ERROR);
    assertThat(o.outputTail()).contains("is not a Chat Completions response: it has no choices[0]; it begins: {\"object\"");
    assertThat(journal.responses).hasSize(1);
    server.answerWith("<html>gateway</html>");
    assertThat(finished(evaluator().evaluate(context("{\"id\": \"c2\", \"input\": \"y\"}", journal))).outputTail())
        .contains("it is not JSON");
  }

  @Test
  void aSlowResponsePastTheRequestTimeoutIsARetryableTimeout() {
    server.delay(Duration.ofSeconds(5));
    InfraFailure f = failed(evaluator("request-timeout", "500ms").evaluate(context("{\"id\": \"c1\", \"input\": \"x\"}",
        new MemoryJournal())));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.TIMEOUT);
    assertThat(f.detail()).contains("no response within 500 ms");
  }

  @Test
  void cancellingTheAttemptStopsTheRequest() throws Exception {
    server.delay(Duration.ofSeconds(30));
    EvalContext ctx = context("{\"id\": \"c1\", \"input\": \"x\"}", new MemoryJournal(), Duration.ofSeconds(60));
    CompletableFuture<Evaluation> running = CompletableFuture.supplyAsync(() -> evaluator().evaluate(ctx));
    await().atMost(Duration.ofSeconds(20)).until(() -> server.requests() == 1);
    ctx.cancel("abandoned by the coordinator");
    Evaluation e = running.get(20, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(failed(e).detail()).isEqualTo("cancelled: abandoned by the coordinator");
  }

  @Test
  void aResponseThatCannotBeJournalledEndsTheAttemptAsARetryableFailure() {
    MemoryJournal journal = new MemoryJournal();
    journal.failure = new ResponseJournal.JournalException("the lease was lost");
    InfraFailure f = failed(evaluator().evaluate(context("{\"id\": \"c1\", \"input\": \"x\"}", journal)));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(f.detail()).isEqualTo("the response could not be journalled: the lease was lost");
  }

  @Test
  void anEndpointThatCannotBeReachedIsRetryable() {
    Map<String, String> o = options();
    o.put("base-url", "http://127.0.0.1:1/v1");
    InfraFailure f = failed(evaluator(o, KEY).evaluate(context("{\"id\": \"c1\", \"input\": \"x\"}", new MemoryJournal())));
    assertThat(f.kind()).isEqualTo(InfraFailure.Kind.EVALUATOR_CRASHED);
    assertThat(f.detail()).startsWith("cannot reach http://127.0.0.1:1/v1/chat/completions");
  }

  @Test
  void retryAfterIsReadInSecondsAndAnythingElseLeavesTheBackoff() {
    assertThat(ModelEvaluator.retryAfter("2")).contains(Duration.ofSeconds(2));
    assertThat(ModelEvaluator.retryAfter("0.5")).contains(Duration.ofMillis(500));
    assertThat(ModelEvaluator.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT")).as("a date already past").contains(Duration.ZERO);
    assertThat(ModelEvaluator.retryAfter("2d")).as("Java's number syntax is not the header's").isEmpty();
    assertThat(ModelEvaluator.retryAfter("-1")).isEmpty();
    assertThat(ModelEvaluator.retryAfter(null)).isEmpty();
    assertThat(ModelEvaluator.retryable(429)).isTrue();
    assertThat(ModelEvaluator.retryable(503)).isTrue();
    assertThat(ModelEvaluator.retryable(401)).isFalse();
    assertThat(ModelEvaluator.retryable(404)).isFalse();
  }

  @Test
  void theSettingsAreCheckedNamingTheFlag() {
    assertThatThrownBy(() -> ModelSettings.parse(Map.of("model", "m"))).hasMessageContaining("--evaluator model needs --base-url");
    assertThatThrownBy(() -> ModelSettings.parse(Map.of("base-url", "http://h/v1"))).hasMessageContaining("needs --model");
    assertThatThrownBy(() -> ModelSettings.parse(options("base-url", "ftp://h/v1"))).hasMessageContaining("--base-url must be an http");
    assertThatThrownBy(() -> ModelSettings.parse(options("temperature", "3"))).hasMessageContaining("--temperature must be from 0 to 2");
    assertThatThrownBy(() -> ModelSettings.parse(options("max-completion-tokens", "0"))).hasMessageContaining("--max-completion-tokens must be a whole number >= 1");
    assertThatThrownBy(() -> ModelSettings.parse(options("seed", "x"))).hasMessageContaining("--model-seed must be a whole number");
    assertThatThrownBy(() -> ModelSettings.parse(options("request-timeout", "0s"))).hasMessageContaining("--model-request-timeout must be positive");
    assertThatThrownBy(() -> ModelSettings.parse(options("price", "1"))).hasMessageContaining("--price must be IN,OUT");
    assertThatThrownBy(() -> ModelSettings.parse(options("api-key-env", "MY-KEY"))).hasMessageContaining("--api-key-env must name");
    assertThatThrownBy(() -> ModelSettings.parse(options("prompt", " "))).hasMessageContaining("--prompt: the prompt template is blank");
    assertThatThrownBy(() -> ModelSettings.parse(options("stop", ModelSettings.stopValue(List.of("a", "b", "c", "d", "e")))))
        .hasMessageContaining("at most 4 --stop");
    ModelSettings s = ModelSettings.parse(options("base-url", "https://api.example.com/v1/"));
    assertThat(s.endpoint().toString()).isEqualTo("https://api.example.com/v1/chat/completions");
    assertThat(s.apiKeyEnv()).isEqualTo(KEY_ENV);
    assertThat(ModelSettings.parse(Map.of("base-url", "http://h", "model", "m")).apiKeyEnv()).isEqualTo("OPENAI_API_KEY");
  }

  @Test
  void theApisJsonFieldsAndTheOptionsConvertBothWays() {
    Map<String, String> o = options("temperature", "0.2", "max-completion-tokens", "8", "stop", ModelSettings.stopValue(List.of("\n")),
        "seed", "3", "request-timeout", "30s", "price", "0.15,0.6", "prompt", "Q: {q}", "system", "s");
    JsonNode json = ModelSettings.toJson(o);
    assertThat(json.get("baseUrl").asText()).isEqualTo(server.baseUrl());
    assertThat(json.get("temperature").isNumber()).isTrue();
    assertThat(json.get("maxCompletionTokens").asInt()).isEqualTo(8);
    assertThat(json.get("stop").get(0).asText()).isEqualTo("\n");
    assertThat(ModelSettings.fromJson(json)).isEqualTo(o);
    assertThatThrownBy(() -> ModelSettings.fromJson(JSON.createObjectNode().put("maxCompletionTokens", "8")))
        .isInstanceOfSatisfying(ModelSettings.OptionException.class,
            e -> assertThat(e.option()).isEqualTo(ModelSettings.Option.MAX_COMPLETION_TOKENS))
        .hasMessage("maxCompletionTokens must be a whole number, got \"8\"");
  }
}
