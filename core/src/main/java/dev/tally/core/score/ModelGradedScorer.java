package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code model-graded}: a grader model reads the task, the reference answer (the case's {@code target}, if
 * any), the answer and a rubric, and ends its reply with a grade: {@code GRADE: C} (correct, score 1, a
 * pass), {@code GRADE: P} (partly correct, 0.5, a fail) or {@code GRADE: I} (incorrect, 0). The last grade
 * in the reply counts; a reply without one is the column's error, quoting its end. The grading scheme is the
 * one Inspect's model-graded scorers use (C/P/I); the prompt is Tally's own.
 *
 * <p>Options: {@code model=NAME} (required), {@code base-url=URL} (required: the grader's OpenAI-compatible
 * endpoint), {@code api-key-env=VAR} (default {@code OPENAI_API_KEY}), {@code rubric=TEXT} (what makes an
 * answer correct; default: agreeing with the reference answer).
 *
 * <p>The task is the case's {@code input} (a string, or the chat messages' contents one per line), else its
 * {@code question}, else the case's JSON.
 *
 * <p>Pure: the call is the {@link Grader}'s. Thread-safety: immutable.
 */
public final class ModelGradedScorer implements Scorer {
  static final String KIND = "model-graded";
  static final String MODEL = "model";
  static final String BASE_URL = "base-url";
  static final String API_KEY_ENV = "api-key-env";
  static final String RUBRIC = "rubric";


  private static final String DEFAULT_RUBRIC =
      "The answer is correct if it says the same as the reference answer (wording and formatting aside); partly"
          + " correct if it is incomplete or hedged but not wrong; otherwise incorrect.";

  private static final Pattern GRADE = Pattern.compile("GRADE\\s*:\\s*([CPI])\\b", Pattern.CASE_INSENSITIVE);

  /** How much of a reply without a grade its error quotes. */
  static final int QUOTED_REPLY_CHARS = 200;

  private final String name;
  private final String model;
  private final String baseUrl;
  private final String apiKeyEnv;
  private final String rubric;

  private ModelGradedScorer(String name, String model, String baseUrl, String apiKeyEnv, String rubric) {
    this.name = name;
    this.model = model;
    this.baseUrl = baseUrl;
    this.apiKeyEnv = apiKeyEnv;
    this.rubric = rubric;
  }

  static Scorer of(Scorers.Context c) {
    String model = c.value(MODEL);
    String baseUrl = c.value(BASE_URL);
    if (model == null || model.isBlank()) {
      throw c.error("model-graded needs model=NAME, the grader model");
    }
    if (baseUrl == null || baseUrl.isBlank()) {
      throw c.error("model-graded needs base-url=URL, the grader's OpenAI-compatible endpoint (http or https)");
    }
    try {
      dev.tally.core.ChatEndpoint.chatCompletions(baseUrl);
    } catch (IllegalArgumentException e) {
      throw c.error("base-url " + e.getMessage());
    }
    String keyEnv = c.value(API_KEY_ENV) == null ? dev.tally.core.ChatEndpoint.DEFAULT_API_KEY_ENV : c.value(API_KEY_ENV);
    try {
      dev.tally.core.ChatEndpoint.apiKeyVariable(keyEnv);
    } catch (IllegalArgumentException e) {
      throw c.error("api-key-env " + e.getMessage());
    }
    String rubric = c.value(RUBRIC);
    return new ModelGradedScorer(c.name(), model.strip(), baseUrl.strip(), keyEnv,
        rubric == null || rubric.isBlank() ? DEFAULT_RUBRIC : rubric.strip());
  }

  @Override
  public String name() {
    return name;
  }

  /** The grader model's name. */
  public String model() {
    return model;
  }

  /** The grader's base URL (requests go to {@code baseUrl/chat/completions}). */
  public String baseUrl() {
    return baseUrl;
  }

  /** The environment variable the grader's key is read from. */
  public String apiKeyEnv() {
    return apiKeyEnv;
  }

  /** Without a grader: the column says it was not graded. */
  @Override
  public ScoreResult score(JsonNode caseFields, String answer) {
    return score(caseFields, answer, Grader.NONE);
  }

  @Override
  public ScoreResult score(JsonNode caseFields, String answer, Grader grader) {
    Objects.requireNonNull(caseFields, "caseFields");
    return result(grader.reply(this, prompt(caseFields, answer)));
  }

  /** The grading prompt for one answer. */
  public String prompt(JsonNode caseFields, String answer) {
    JsonNode target = caseFields.get("target");
    String reference = target == null || target.isNull() ? "(none given)"
        : target.isTextual() ? target.textValue() : target.toString();
    return "You are grading an answer to a task.\n\n[Task]\n" + task(caseFields) + "\n\n[Reference answer]\n" + reference
        + "\n\n[Answer to grade]\n" + (answer == null ? "" : answer) + "\n\n[Rubric]\n" + rubric
        + "\n\nReason briefly, then end your reply with one line: GRADE: C (correct), GRADE: P (partly correct)"
        + " or GRADE: I (incorrect).";
  }

  private static String task(JsonNode c) {
    JsonNode input = c.get("input");
    if (input != null && input.isTextual()) {
      return input.textValue();
    }
    if (input != null && input.isArray()) {
      StringBuilder s = new StringBuilder();
      for (JsonNode m : input) {
        s.append(m.path("role").asText("user")).append(": ").append(m.path("content").asText()).append('\n');
      }
      return s.toString().strip();
    }
    JsonNode question = c.get("question");
    return question != null && question.isTextual() ? question.textValue() : c.toString();
  }

  /**
   * The result of a grader's reply: its last grade.
   *
   * @throws ScoringException if the reply has no {@code GRADE: C|P|I}
   */
  public ScoreResult result(String reply) {
    Matcher m = GRADE.matcher(reply);
    String grade = null;
    while (m.find()) {
      grade = m.group(1).toUpperCase(Locale.ROOT);
    }
    if (grade == null) {
      String end = reply.length() <= QUOTED_REPLY_CHARS ? reply : "…" + reply.substring(reply.length() - QUOTED_REPLY_CHARS);
      throw new ScoringException("the grader " + model + " gave no GRADE: C, P or I; its reply ends: " + end.strip());
    }
    return switch (grade) {
      case "C" -> new ScoreResult(1, true, "C", "graded correct by " + model);
      case "P" -> new ScoreResult(0.5, false, "P", "graded partly correct by " + model);
      default -> new ScoreResult(0, false, "I", "graded incorrect by " + model);
    };
  }
}
