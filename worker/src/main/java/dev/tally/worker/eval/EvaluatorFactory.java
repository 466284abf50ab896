package dev.tally.worker.eval;

import dev.tally.core.score.Scorers;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Builds the built-in evaluators from a run's configuration ({@code RunConfig.evaluator} and {@code
 * options}).
 *
 * <ul>
 *   <li>{@code noop}: passes at once, no score. No options.
 *   <li>{@code sleep}: waits the case's {@code millis} field, else option {@code millis} (default 0),
 *       then passes; with option {@code burn=true} it keeps the CPU busy that long instead of waiting.
 *   <li>{@code exec}: runs option {@code cmd} per case, see {@link ExecEvaluator}; with option {@code
 *       serve=true}, starts it once per slot and hands it the cases one per line, see {@link ServeEvaluator}.
 *   <li>{@code model}: asks an OpenAI-compatible Chat Completions endpoint per case, see {@link
 *       ModelEvaluator}; its options are {@link ModelSettings}'.
 * </ul>
 *
 * <p>Any kind with option {@link Scorers#OPTION} (the run's {@code --scorer} specs) has its outcomes judged
 * by those scorers ({@link ScoringEvaluator}).
 */
public final class EvaluatorFactory {
  /** The kinds {@link #create} knows, in the order error messages list them. */
  public static final List<String> KINDS = List.of("exec", "model", "sleep", "noop");

  private EvaluatorFactory() {}

  /**
   * Builds an evaluator.
   *
   * @param kind {@code exec}, {@code model}, {@code sleep} or {@code noop}
   * @param options the run's evaluator options
   * @return a thread-safe evaluator, to be shared by every slot running the run's cases
   * @throws IllegalArgumentException if {@code kind} is none of {@link #KINDS} (the message names it and
   *     the known ones), if {@code exec} has no {@code cmd} or an unusable one (with {@code serve}, one with
   *     placeholders), or a {@code serve} that is neither {@code true} nor {@code false}, or if {@code sleep}'s
   *     {@code millis} is not a non-negative integer or its {@code burn} neither {@code true} nor {@code false}, or if {@code model}'s options are refused by {@link
   *     ModelSettings#parse} (a {@link ModelSettings.OptionException} naming the option), or if the scorers option is malformed or a spec in it
   *     is refused by {@link Scorers#parse(List)}
   */
  public static Evaluator create(String kind, Map<String, String> options) {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(options, "options");
    Evaluator evaluator = evaluator(kind, options);
    List<String> specs = Scorers.specsOf(options);
    return specs.isEmpty() ? evaluator : new ScoringEvaluator(evaluator, dev.tally.core.score.Judge.of(specs));
  }

  private static Evaluator evaluator(String kind, Map<String, String> options) {
    switch (kind) {
      case "noop":
        return new NoopEvaluator();
      case "sleep":
        String millis = options.getOrDefault("millis", "0").trim();
        String burn = options.getOrDefault("burn", "false").trim();
        if (!burn.equals("true") && !burn.equals("false")) {
          throw new IllegalArgumentException("sleep option burn must be true or false, got '" + burn + "'");
        }
        try {
          return new SleepEvaluator(Long.parseLong(millis), burn.equals("true"));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "sleep option millis must be a non-negative integer, got '" + millis + "'", e);
        }
      case "exec":
        String cmd = options.get("cmd");
        if (cmd == null || cmd.isBlank()) {
          throw new IllegalArgumentException("exec needs option cmd (the command template), got " + options);
        }
        CommandTemplate template = CommandTemplate.parse(cmd);
        return ServeEvaluator.requested(options) ? new ServeEvaluator(template) : new ExecEvaluator(template);
      case "model":
        return new ModelEvaluator(ModelSettings.parse(options));
      default:
        throw new IllegalArgumentException(
            "unknown evaluator kind '" + kind + "'; known kinds: " + String.join(", ", KINDS));
    }
  }
}
