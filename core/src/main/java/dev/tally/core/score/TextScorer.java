package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * {@code exact}: the answer equals a target; {@code includes}: the answer contains a target. Both after
 * {@link TextNormalizer}'s normalisation of answer and target alike. The target is the case's {@code
 * target}, a string or a list of strings (any one of them is right). {@code includes} refuses a target that
 * normalises to nothing, which every answer would include.
 *
 * <p>Thread-safety: immutable.
 */
final class TextScorer implements Scorer {
  static final String EXACT = "exact";
  static final String INCLUDES = "includes";

  private final String name;
  private final String kind;
  private final TextNormalizer normalizer;

  private TextScorer(String name, String kind, TextNormalizer normalizer) {
    this.name = name;
    this.kind = kind;
    this.normalizer = normalizer;
  }

  static Scorer of(Scorers.Context c, String kind) {
    return new TextScorer(c.name(), kind, TextNormalizer.of(c));
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ScoreResult score(JsonNode caseFields, String answer) {
    List<String> targets = Targets.texts(kind, caseFields);
    String seen = normalizer.apply(answer == null ? "" : answer);
    for (int i = 0; i < targets.size(); i++) {
      String target = normalizer.apply(targets.get(i));
      if (kind.equals(INCLUDES) && target.isEmpty()) {
        throw new ScoringException(kind + ": case field \"target\"" + (targets.size() > 1 ? "[" + i + "]" : "")
            + " is empty after normalisation, and every answer includes it");
      }
      boolean hit = kind.equals(EXACT) ? seen.equals(target) : seen.contains(target);
      if (hit) {
        return ScoreResult.pass(seen, (kind.equals(EXACT) ? "equals " : "includes ") + which(i, targets.size()) + Targets.quote(target));
      }
    }
    // "equals not the target" read as a typo: the failing sentence is said the other way round
    return ScoreResult.fail(seen, (kind.equals(EXACT) ? "does not equal " : "does not include ") + (targets.size() == 1
        ? "the target " + Targets.quote(normalizer.apply(targets.get(0)))
        : "any of the " + targets.size() + " targets"));
  }

  private static String which(int i, int n) {
    return n == 1 ? "the target " : "target " + (i + 1) + " of " + n + ", ";
  }
}
