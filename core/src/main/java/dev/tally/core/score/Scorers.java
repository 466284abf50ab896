package dev.tally.core.score;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The built-in scorers and the one place that turns scorer specs ({@link ScorerSpec}'s grammar) into
 * {@link Scorer}s: which kinds exist, which options each takes, and the option every kind takes, {@code
 * name=NAME} (the key of its result, {@code scores.NAME}; default its kind).
 *
 * <table>
 *   <caption>Kinds and their options</caption>
 *   <tr><th>kind</th><th>options</th><th>reads</th></tr>
 *   <tr><td>{@code exact}</td><td>{@code ignore-case, ignore-whitespace, ignore-punctuation, ignore-articles}</td><td>{@code target}</td></tr>
 *   <tr><td>{@code includes}</td><td>the same</td><td>{@code target}</td></tr>
 *   <tr><td>{@code regex}</td><td>{@code pattern=P, ignore-case, full}</td><td>{@code target} when no pattern</td></tr>
 *   <tr><td>{@code numeric}</td><td>{@code abs=X, rel=X}</td><td>{@code target}</td></tr>
 *   <tr><td>{@code choice}</td><td>none</td><td>{@code choices}, {@code target}</td></tr>
 *   <tr><td>{@code json}</td><td>{@code schema=JSON, schema-file=PATH, schema-field=FIELD, parses}</td><td>{@code target} or the schema</td></tr>
 *   <tr><td>{@code model-graded}</td><td>{@code model=NAME, base-url=URL, api-key-env=VAR, rubric=TEXT}</td><td>{@code input}, {@code target} (a grader model reads them)</td></tr>
 * </table>
 *
 * <p>Each kind's class documents its rules. Thread-safety: stateless; thread-safe.
 */
public final class Scorers {
  /** The option every kind takes. */
  public static final String NAME_OPTION = "name";

  /**
   * What a scorer's name may be: it becomes a key under {@code scores.} in an outcome's fields and a column
   * in reports, so no dots (which would read as nesting) and no white space; 64 characters is plenty.
   */
  private static final Pattern SCORER_NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");

  /** A kind: its flags, its options with a value, and how to make it from a checked spec. */
  private record Kind(Set<String> flags, Set<String> valued, Function<Context, Scorer> factory) {}

  /** A checked spec, with what a factory may need. */
  record Context(ScorerSpec spec, String name, ScorerFiles files) {
    boolean flag(String key) {
      return spec.options().containsKey(key);
    }

    String value(String key) {
      return spec.options().get(key);
    }

    IllegalArgumentException error(String what) {
      return ScorerSpec.error(spec.text(), what);
    }
  }

  private static final Map<String, Kind> KINDS = kinds();

  /**
   * The evaluator option that carries a run's scorer specs, in order, to its workers and into the store: a
   * JSON array of spec texts ({@link #optionValue}, {@link #specsOf}). Specs travel with their files already
   * inlined ({@link #withFilesInlined}), since a worker may be on another machine.
   */
  public static final String OPTION = "scorers";

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  private Scorers() {}

  private static Map<String, Kind> kinds() {
    Map<String, Kind> k = new LinkedHashMap<>();
    Set<String> normalisation = Set.copyOf(TextNormalizer.FLAGS);
    k.put(TextScorer.EXACT, new Kind(normalisation, Set.of(), c -> TextScorer.of(c, TextScorer.EXACT)));
    k.put(TextScorer.INCLUDES, new Kind(normalisation, Set.of(), c -> TextScorer.of(c, TextScorer.INCLUDES)));
    k.put(RegexScorer.KIND, new Kind(Set.of(RegexScorer.IGNORE_CASE, RegexScorer.FULL), Set.of(RegexScorer.PATTERN), RegexScorer::of));
    k.put(NumericScorer.KIND, new Kind(Set.of(), Set.of(NumericScorer.ABS, NumericScorer.REL), NumericScorer::of));
    k.put(ChoiceScorer.KIND, new Kind(Set.of(), Set.of(), ChoiceScorer::of));
    k.put(JsonScorer.KIND, new Kind(Set.of(JsonScorer.PARSES), Set.of(JsonScorer.SCHEMA, JsonScorer.SCHEMA_FILE, JsonScorer.SCHEMA_FIELD), JsonScorer::of));
    k.put(ModelGradedScorer.KIND, new Kind(Set.of(), Set.of(ModelGradedScorer.MODEL, ModelGradedScorer.BASE_URL,
        ModelGradedScorer.API_KEY_ENV, ModelGradedScorer.RUBRIC), ModelGradedScorer::of));
    return Map.copyOf(k);
  }

  /** The built-in kinds, in the order documented. */
  public static List<String> kindNames() {
    return List.of(TextScorer.EXACT, TextScorer.INCLUDES, RegexScorer.KIND, NumericScorer.KIND, ChoiceScorer.KIND, JsonScorer.KIND,
        ModelGradedScorer.KIND);
  }

  /**
   * The scorers of a run, in the order given (the first is the run's verdict and score), for specs that read
   * no file.
   *
   * @see #parse(List, ScorerFiles)
   */
  public static List<Scorer> parse(List<String> specs) {
    return parse(specs, ScorerFiles.NONE);
  }

  /**
   * The scorers of a run, in the order given; the first is the run's verdict and score.
   *
   * @param specs one spec per scorer, each in {@link ScorerSpec}'s grammar
   * @param files reads the files that options name ({@code json:schema-file=PATH}), now, once
   * @return the scorers, unmodifiable; empty when {@code specs} is
   * @throws IllegalArgumentException if a spec breaks the grammar, names an unknown kind (the message lists
   *     the known ones) or an option its kind does not take (the message lists the kind's options), gives a
   *     flag a value or an option none, has a bad value (a pattern that does not compile, a negative
   *     tolerance, a file that cannot be read or is no JSON Schema), or if two scorers have the same name
   *     (the message says to give one {@code name=})
   */
  public static List<Scorer> parse(List<String> specs, ScorerFiles files) {
    Objects.requireNonNull(specs, "specs");
    Objects.requireNonNull(files, "files");
    List<Scorer> scorers = new ArrayList<>();
    Map<String, String> specOfName = new HashMap<>();
    for (String text : specs) {
      Scorer scorer = parseOne(text, files);
      String earlier = specOfName.putIfAbsent(scorer.name(), text);
      if (earlier != null) {
        throw ScorerSpec.error(text, "a second scorer named " + scorer.name() + " (the first is \"" + earlier
            + "\"); give one of them " + NAME_OPTION + "=SOMETHING");
      }
      scorers.add(scorer);
    }
    return List.copyOf(scorers);
  }

  /**
   * The same specs with every file they name read now and put inline ({@code json:schema-file=PATH} becomes
   * {@code json:schema="{...}"}), so that they can be parsed again where the file is not, by {@link
   * #parse(List)} with no file reader: what a command line sends to workers on other machines. Specs that
   * name no file are returned as they were written.
   *
   * @param specs one spec per scorer
   * @param files reads the files named
   * @return the specs, in order, each valid for {@link #parse(List)}
   * @throws IllegalArgumentException as {@link #parse(List, ScorerFiles)} does
   */
  public static List<String> withFilesInlined(List<String> specs, ScorerFiles files) {
    parse(specs, files);
    List<String> out = new ArrayList<>();
    for (String text : specs) {
      ScorerSpec spec = ScorerSpec.parse(text);
      String path = spec.options().get(JsonScorer.SCHEMA_FILE);
      if (spec.kind().equals(JsonScorer.KIND) && path != null) {
        String schema = JsonScorer.readSchemaFile(new Context(spec, spec.kind(), files), path).toString();
        out.add(spec.without(JsonScorer.SCHEMA_FILE).with(JsonScorer.SCHEMA, schema).text());
      } else {
        out.add(text);
      }
    }
    parse(out);
    return List.copyOf(out);
  }

  /**
   * The value of {@link #OPTION} for these specs.
   *
   * @param specs one spec per scorer, in order; not empty
   * @throws IllegalArgumentException if {@code specs} is empty (a run without scorers has no such option)
   */
  public static String optionValue(List<String> specs) {
    if (specs.isEmpty()) {
      throw new IllegalArgumentException("a run without scorers has no " + OPTION + " option");
    }
    try {
      return JSON.writeValueAsString(specs);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("a list of strings cannot fail to serialize", e);
    }
  }

  /**
   * The scorer specs an evaluator's options carry ({@link #OPTION}), in order; empty when it has none.
   *
   * @throws IllegalArgumentException if the option is there but is not a JSON array of strings
   */
  public static List<String> specsOf(Map<String, String> evaluatorOptions) {
    String value = evaluatorOptions.get(OPTION);
    if (value == null) {
      return List.of();
    }
    try {
      com.fasterxml.jackson.databind.JsonNode array = JSON.readTree(value);
      List<String> specs = new ArrayList<>();
      if (array != null && array.isArray()) {
        for (com.fasterxml.jackson.databind.JsonNode spec : array) {
          if (!spec.isTextual()) {
            specs = null;
            break;
          }
          specs.add(spec.textValue());
        }
        if (specs != null && !specs.isEmpty()) {
          return List.copyOf(specs);
        }
      }
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      // refused below, with the value
    }
    String shown = value.length() <= 100 ? value : value.substring(0, 100) + "...";
    throw new IllegalArgumentException("evaluator option " + OPTION + " must be a non-empty JSON array of scorer specs, got " + shown);
  }

  private static Scorer parseOne(String text, ScorerFiles files) {
    ScorerSpec spec = ScorerSpec.parse(text);
    Kind kind = KINDS.get(spec.kind());
    if (kind == null) {
      throw ScorerSpec.error(text, "unknown scorer " + spec.kind() + "; the scorers are " + String.join(", ", kindNames()));
    }
    for (Map.Entry<String, String> option : spec.options().entrySet()) {
      String key = option.getKey();
      boolean isFlag = kind.flags().contains(key);
      boolean isValued = kind.valued().contains(key) || key.equals(NAME_OPTION);
      if (!isFlag && !isValued) {
        throw ScorerSpec.error(text, spec.kind() + " has no option " + key + "; its options are " + optionList(kind));
      }
      if (isFlag && option.getValue() != null) {
        throw ScorerSpec.error(text, "option " + key + " takes no value");
      }
      if (isValued && option.getValue() == null) {
        throw ScorerSpec.error(text, "option " + key + " needs a value: " + key + "=...");
      }
    }
    String name = spec.options().getOrDefault(NAME_OPTION, spec.kind());
    if (!SCORER_NAME.matcher(name).matches()) {
      throw ScorerSpec.error(text, "name \"" + name + "\" must be 1 to 64 letters, digits, _ or -");
    }
    return kind.factory().apply(new Context(spec, name, files));
  }

  private static String optionList(Kind kind) {
    Set<String> all = new LinkedHashSet<>();
    kind.flags().stream().sorted().forEach(all::add);
    kind.valued().stream().sorted().map(v -> v + "=...").forEach(all::add);
    all.add(NAME_OPTION + "=...");
    return String.join(", ", all);
  }
}
