package dev.tally.datasets;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What a dataset file is: its syntax ({@link Syntax}: how records are cut out of the bytes) and its shape
 * ({@link Shape}: how one record becomes a case). The one owner of the names {@code --format} takes and of
 * detection: the syntax from the file's extension, the shape from the first record.
 *
 * <h2>Detection of the shape</h2>
 *
 * A record is promptfoo's when it has {@code vars} or {@code assert} (in a CSV: a column whose name starts
 * with {@code __}, promptfoo's reserved columns such as {@code __expected}); openai/evals' when it has {@code
 * ideal}; Inspect's when it has {@code input} with {@code target}, {@code choices}, {@code files}, {@code
 * setup} or {@code sandbox}; plain otherwise (the record is the case as it is). Inspect's sample is the
 * conventional case shape, so a plain file written with {@code input} and {@code target} reads the same
 * either way. A record with the marks of two shapes is ambiguous: detection refuses it and names both, and
 * {@code --format} settles it.
 *
 * @param syntax how records are read
 * @param shape how a record becomes a case
 */
public record DatasetFormat(Syntax syntax, Shape shape) {

  /** How records are cut out of a file. */
  public enum Syntax {
    /** One JSON object per line ({@code .jsonl}, {@code .ndjson}), by {@link dev.tally.core.cases.CaseLines}' grammar. */
    JSON_LINES("jsonl", ".jsonl", ".ndjson"),
    /** One JSON array of objects ({@code .json}), streamed. */
    JSON("json", ".json"),
    /** RFC 4180 CSV with a header row ({@code .csv}); every cell a string unless typed ({@link CsvTypes}). */
    CSV("csv", ".csv"),
    /** A YAML sequence of mappings ({@code .yaml}, {@code .yml}), or a mapping whose {@code tests} is one. */
    YAML("yaml", ".yaml", ".yml");

    private final String optionName;
    private final List<String> extensions;

    Syntax(String optionName, String... extensions) {
      this.optionName = optionName;
      this.extensions = List.of(extensions);
    }

    /** The name {@code --format} takes for this syntax with the plain shape. */
    public String optionName() {
      return optionName;
    }

    /** The syntax a file name's extension says (case-insensitive), or empty. */
    public static Optional<Syntax> ofFile(Path file) {
      Path name = file.getFileName();
      String lower = name == null ? "" : name.toString().toLowerCase(Locale.ROOT);
      return Arrays.stream(values()).filter(s -> s.extensions.stream().anyMatch(lower::endsWith)).findFirst();
    }
  }

  /** How one record becomes a case ({@link CaseShapes} maps each). */
  public enum Shape {
    /** The record is the case as it is. */
    PLAIN("plain", Syntax.JSON_LINES),
    /** An openai/evals sample: {@code input} (a string or chat messages), {@code ideal} (a string or a list) -> {@code target}. */
    OPENAI_EVALS("openai-evals", Syntax.JSON_LINES),
    /** An Inspect {@code Sample}: {@code input}, {@code target}, {@code choices}, {@code id}, {@code metadata}, {@code files}, {@code setup}. */
    INSPECT("inspect", Syntax.JSON_LINES),
    /** A promptfoo test: {@code vars}, {@code assert}, {@code description}; or a promptfoo CSV row. */
    PROMPTFOO("promptfoo", Syntax.YAML);

    private final String optionName;
    private final Syntax usualSyntax;

    Shape(String optionName, Syntax usualSyntax) {
      this.optionName = optionName;
      this.usualSyntax = usualSyntax;
    }

    /** The name {@code --format} takes for this shape. */
    public String optionName() {
      return optionName;
    }
  }

  /** The names {@code --format} takes, in the order help lists them. */
  public static List<String> optionNames() {
    List<String> names = new ArrayList<>();
    for (Syntax s : Syntax.values()) {
      names.add(s.optionName);
    }
    for (Shape s : Shape.values()) {
      if (s != Shape.PLAIN) {
        names.add(s.optionName);
      }
    }
    return names;
  }

  /**
   * What {@code --format NAME} forces for {@code file}: a syntax name ({@code jsonl}, {@code json}, {@code
   * csv}, {@code yaml}) forces the syntax and the plain shape; a shape name ({@code openai-evals}, {@code
   * inspect}, {@code promptfoo}) forces the shape, its syntax still from the extension (else the shape's
   * usual one: JSON Lines, or YAML for promptfoo).
   *
   * @throws IllegalArgumentException if the name is none of {@link #optionNames()} (the message lists them)
   */
  public static DatasetFormat forced(String name, Path file) {
    for (Syntax s : Syntax.values()) {
      if (s.optionName.equals(name)) {
        return new DatasetFormat(s, Shape.PLAIN);
      }
    }
    for (Shape s : Shape.values()) {
      if (s != Shape.PLAIN && s.optionName.equals(name)) {
        return new DatasetFormat(Syntax.ofFile(file).orElse(s.usualSyntax), s);
      }
    }
    throw new IllegalArgumentException("unknown format \"" + name + "\"; the formats are " + String.join(", ", optionNames()));
  }

  /** The shapes a record's fields mark it as (empty: plain); more than one is ambiguous. */
  static List<Shape> marks(ObjectNode record, boolean csv) {
    List<Shape> shapes = new ArrayList<>();
    boolean promptfoo = record.has("assert") || (record.get("vars") != null && record.get("vars").isObject());
    if (csv) {
      for (var names = record.fieldNames(); names.hasNext(); ) {
        promptfoo |= names.next().startsWith("__");
      }
    }
    if (promptfoo) {
      shapes.add(Shape.PROMPTFOO);
    }
    if (record.has("ideal")) {
      shapes.add(Shape.OPENAI_EVALS);
    }
    boolean inspect = record.has("input")
        && (record.has("target") || record.has("choices") || record.has("files") || record.has("setup") || record.has("sandbox"));
    if (inspect) {
      shapes.add(Shape.INSPECT);
    }
    return shapes;
  }

  /**
   * The shape of a file whose first record is {@code first}.
   *
   * @throws IllegalArgumentException if the record has the marks of two shapes (the message names both)
   */
  static Shape detectShape(JsonNode first, boolean csv) {
    List<Shape> shapes = marks((ObjectNode) first, csv);
    if (shapes.size() > 1) {
      throw new IllegalArgumentException("the format is ambiguous: the first record looks like "
          + shapes.stream().map(Shape::optionName).collect(Collectors.joining(" and like "))
          + "; choose one with --format " + shapes.stream().map(Shape::optionName).collect(Collectors.joining(" or --format ")));
    }
    return shapes.isEmpty() ? Shape.PLAIN : shapes.get(0);
  }

  /** The name to show for this format: the shape's, else the syntax's. */
  public String describe() {
    return shape == Shape.PLAIN ? syntax.optionName : shape.optionName + " (" + syntax.optionName + ")";
  }
}
