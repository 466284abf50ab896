package dev.tally.core.stats;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Accuracy and mean score per group of cases (for {@code --group-by FIELD}): fed one case at a time with its
 * group, whether it passed and its score, it keeps three counters and two sums per group and states each
 * group's figures through {@link Estimates}, as the run's own figures are stated.
 *
 * <p>What a case's group is has one owner, {@link #groupOf}: the case's {@code metadata.FIELD}, else its
 * {@code FIELD}, a field path either way, else {@link #MISSING}.
 *
 * <p>Memory is bounded: at most {@link #MAX_GROUPS} groups are kept; cases of later groups are counted
 * together under {@link #OTHER} and {@link #truncated()} says so.
 *
 * <p>Thread-safety: none; one accumulator is fed by one thread.
 */
public final class GroupedEstimates {
  /**
   * The most groups kept. Grouping is for a field with a handful of values (subject, difficulty, language);
   * a field with a value per case (an id) would otherwise grow one entry per case and a report no one can
   * read. 10,000 covers MMLU's 57 subjects and far larger taxonomies.
   */
  public static final int MAX_GROUPS = 10_000;

  /** The group of a case that has no such field (or whose field is JSON null). */
  public static final String MISSING = "(missing)";

  /** The group that gathers the cases of every group past {@link #MAX_GROUPS}. */
  public static final String OTHER = "(other)";

  /**
   * One group's figures.
   *
   * @param cases cases fed in this group
   * @param accuracy passed over judged, Wilson interval; empty when none was judged
   * @param meanScore mean of the scores given, Student's t interval; empty when none had a score
   */
  public record Group(long cases, Optional<Estimate> accuracy, Optional<Estimate> meanScore) {}

  private static final class Counts {
    long cases;
    long judged;
    long passed;
    long scored;
    double sum;
    double sumOfSquares;
  }

  private final Map<String, Counts> groups = new LinkedHashMap<>();
  private boolean truncated;

  /**
   * The group of a case for {@code field}: {@code metadata.FIELD} if the case has it, else {@code FIELD} from
   * the case's top, else {@link #MISSING}. {@code FIELD} is a field path as a template's placeholder reads it
   * ({@link dev.tally.core.cases.FieldPath}: {@code meta.lang} steps into {@code meta}). A string is its
   * text; any other JSON value its JSON text ({@code 3}, {@code true}, {@code ["a"]}).
   *
   * @param caseFields the case's JSON object
   * @param field the field's path
   * @throws NullPointerException if an argument is null
   */
  public static String groupOf(JsonNode caseFields, String field) {
    Objects.requireNonNull(caseFields, "caseFields");
    Objects.requireNonNull(field, "field");
    JsonNode metadata = caseFields.get("metadata");
    JsonNode value = metadata != null && metadata.isObject() ? dev.tally.core.cases.FieldPath.valueAt(metadata, field) : null;
    if (value == null || value.isNull()) {
      value = dev.tally.core.cases.FieldPath.valueAt(caseFields, field);
    }
    if (value == null || value.isNull()) {
      return MISSING;
    }
    return value.isTextual() ? value.textValue() : value.toString();
  }

  /**
   * Counts one case.
   *
   * @param group its group (from {@link #groupOf})
   * @param passed whether it passed; {@code null} when it was not judged (cancelled), so that it counts
   *     in neither the numerator nor the denominator of accuracy. An error or a case out of attempts is
   *     judged and did not pass: {@code false}.
   * @param score its score, or {@code null} when it has none
   * @throws IllegalArgumentException if {@code score} is not finite
   * @throws NullPointerException if {@code group} is null
   */
  public void add(String group, Boolean passed, Double score) {
    Objects.requireNonNull(group, "group");
    if (score != null && !Double.isFinite(score)) {
      throw new IllegalArgumentException("score must be finite: " + score + " (group " + group + ")");
    }
    Counts c = groups.get(group);
    if (c == null) {
      if (groups.size() >= MAX_GROUPS) {
        truncated = true;
        c = groups.computeIfAbsent(OTHER, g -> new Counts());
      } else {
        c = new Counts();
        groups.put(group, c);
      }
    }
    c.cases++;
    if (passed != null) {
      c.judged++;
      if (passed) {
        c.passed++;
      }
    }
    if (score != null) {
      c.scored++;
      c.sum += score;
      c.sumOfSquares += score * score;
    }
  }

  /** Whether some groups past {@link #MAX_GROUPS} were counted under {@link #OTHER}. */
  public boolean truncated() {
    return truncated;
  }

  /** Each group's figures, by group name in natural string order; an unmodifiable snapshot. */
  public Map<String, Group> groups() {
    Map<String, Group> out = new TreeMap<>();
    groups.forEach((name, c) -> out.put(name, new Group(
        c.cases, Estimates.proportion(c.passed, c.judged), Estimates.mean(c.scored, c.sum, c.sumOfSquares))));
    return Collections.unmodifiableMap(out);
  }
}
