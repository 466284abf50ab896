package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.http.dto.Problem;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The run's fields of a submission: defaults, and refusals that name the field (and line). */
class SubmissionTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration TEN_MINUTES = Duration.ofMinutes(10);

  private static Submission parse(String json, long line) throws Exception {
    return Submission.parse(JSON.readTree(json), line, TEN_MINUTES);
  }

  private static Problem refusal(String json, long line) {
    try {
      parse(json, line);
    } catch (ProblemException e) {
      return e.toProblem("/api/v1/runs");
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("accepted: " + json);
  }

  @Test
  void readsEveryFieldAndDefaultsTheSettingsAsTallyRunDoes() throws Exception {
    Submission exec = parse("{\"name\":\"nightly\",\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"echo {id}\"},"
        + "\"settings\":{\"maxAttempts\":3,\"timeoutRetries\":0,\"caseTimeout\":\"30s\"}}", 0);
    assertThat(exec.name()).isEqualTo("nightly");
    assertThat(exec.evaluator().options()).containsEntry("cmd", "echo {id}");
    assertThat(exec.evaluator().caseTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(exec.limits()).isEqualTo(new AttemptLimits(3, 0));
    assertThat(exec.missingField(JSON.readTree("{\"x\":1}"))).contains("id");

    Submission noop = parse("{\"evaluator\":{\"kind\":\"noop\"}}", 1);
    assertThat(noop.name()).isEmpty();
    assertThat(noop.limits()).isEqualTo(AttemptLimits.defaults());
    assertThat(noop.evaluator().caseTimeout()).isEqualTo(TEN_MINUTES);
    assertThat(parse("{\"evaluator\":{\"kind\":\"sleep\",\"millis\":5}}", 1).evaluator().options()).containsEntry("millis", "5");
  }

  @Test
  void execServeIsCarriedAsAnOptionAndTheRunObjectSaysIt() throws Exception {
    Submission served = parse("{\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"python3 score.py\",\"serve\":true}}", 0);
    assertThat(served.evaluator().options()).containsEntry("serve", "true");
    assertThat(ApiViews.evaluator(served.evaluator()).serve()).isTrue();
    Submission plain = parse("{\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"python3 score.py\",\"serve\":false}}", 0);
    assertThat(plain.evaluator().options()).doesNotContainKey("serve");
    assertThat(ApiViews.evaluator(plain.evaluator()).serve()).isNull();

    Problem placeholders = refusal("{\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"python3 score.py {id}\",\"serve\":true}}", 0);
    assertThat(placeholders.field()).isEqualTo("/evaluator/cmd");
    assertThat(placeholders.detail()).contains("cannot use case fields (it has {id})");
    Problem notBoolean = refusal("{\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"x\",\"serve\":\"yes\"}}", 0);
    assertThat(notBoolean.field()).isEqualTo("/evaluator/serve");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"noop\",\"serve\":true}}", 0).field()).isEqualTo("/evaluator/serve");
  }

  @Test
  void anUnknownFieldIsRefusedNamingIt() {
    Problem p = refusal("{\"evaluator\":{\"kind\":\"noop\"},\"settings\":{\"maxAttempt\":3}}", 0);
    assertThat(p.status()).isEqualTo(400);
    assertThat(p.field()).isEqualTo("/settings/maxAttempt");
    assertThat(p.detail()).contains("unknown field 'maxAttempt'").contains("maxAttempts");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"noop\",\"cmd\":\"x\"}}", 0).field()).isEqualTo("/evaluator/cmd");
  }

  @Test
  void anNdjsonHeaderLineIsRefusedWithItsLineAndHasNoInlineCases() {
    Problem p = refusal("{\"evaluator\":{\"kind\":\"noop\"},\"cases\":[]}", 1);
    assertThat(p.line()).isEqualTo(1);
    assertThat(p.field()).isEqualTo("/cases");
    assertThat(p.detail()).startsWith("request body line 1: ");
  }

  @Test
  void badValuesAreRefusedNamingTheirField() {
    assertThat(refusal("{}", 0).field()).isEqualTo("/evaluator");
    assertThat(refusal("[]", 0).field()).isNull();
    assertThat(refusal("{\"evaluator\":{\"kind\":\"python\"}}", 0).field()).isEqualTo("/evaluator/kind");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"exec\"}}", 0).field()).isEqualTo("/evaluator/cmd");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"exec\",\"cmd\":\"  \"}}", 0).field()).isEqualTo("/evaluator/cmd");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"sleep\",\"millis\":-1}}", 0).field()).isEqualTo("/evaluator/millis");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"noop\"},\"settings\":{\"maxAttempts\":0}}", 0).field()).isEqualTo("/settings/maxAttempts");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"noop\"},\"settings\":{\"caseTimeout\":\"soon\"}}", 0).field()).isEqualTo("/settings/caseTimeout");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"noop\"},\"settings\":{\"caseTimeout\":\"0s\"}}", 0).field()).isEqualTo("/settings/caseTimeout");
    // shorter than the store's millisecond: a 400 naming the field, not a 500 (the breaker's round)
    var tooShort = refusal("{\"evaluator\":{\"kind\":\"noop\"},\"settings\":{\"caseTimeout\":\"PT0.0005S\"}}", 0);
    assertThat(tooShort.field()).isEqualTo("/settings/caseTimeout");
    assertThat(tooShort.detail()).contains("caseTimeout must be from 1ms to 365 days, got PT0.0005S");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"noop\"},\"name\":7}", 0).field()).isEqualTo("/name");
  }

  @Test
  void aModelEvaluatorsFieldsBecomeItsOptionsAndABadOneIsRefusedNamingItsField() throws Exception {
    Submission model = parse("{\"evaluator\":{\"kind\":\"model\",\"baseUrl\":\"http://127.0.0.1:9/v1\",\"model\":\"m\","
        + "\"temperature\":0.5,\"maxCompletionTokens\":8,\"stop\":[\"END\"],\"seed\":3,\"requestTimeout\":\"20s\",\"price\":\"1,2\","
        + "\"prompt\":\"Q: {question}\"}}", 0);
    assertThat(model.evaluator().options()).containsEntry("base-url", "http://127.0.0.1:9/v1").containsEntry("temperature", "0.5")
        .containsEntry("max-completion-tokens", "8").containsEntry("stop", "[\"END\"]").containsEntry("seed", "3")
        .containsEntry("request-timeout", "20s").containsEntry("price", "1,2").containsEntry("prompt", "Q: {question}");
    assertThat(ApiViews.evaluator(model.evaluator()).temperature()).isEqualTo(0.5);
    assertThat(ApiViews.evaluator(model.evaluator()).stop()).containsExactly("END");

    assertThat(refusal("{\"evaluator\":{\"kind\":\"model\",\"model\":\"m\"}}", 0).field()).isEqualTo("/evaluator/baseUrl");
    Problem temperature = refusal("{\"evaluator\":{\"kind\":\"model\",\"baseUrl\":\"http://h/v1\",\"model\":\"m\",\"temperature\":9}}", 0);
    assertThat(temperature.field()).isEqualTo("/evaluator/temperature");
    assertThat(temperature.detail()).contains("must be from 0 to 2");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"model\",\"baseUrl\":\"http://h/v1\",\"model\":\"m\",\"maxCompletionTokens\":\"8\"}}", 0)
        .field()).isEqualTo("/evaluator/maxCompletionTokens");
    assertThat(refusal("{\"evaluator\":{\"kind\":\"model\",\"baseUrl\":\"http://h/v1\",\"model\":\"m\",\"apiKey\":\"sk-1\"}}", 0)
        .field()).as("there is no field for a key: workers read it from their environment").isEqualTo("/evaluator/apiKey");
  }
}
