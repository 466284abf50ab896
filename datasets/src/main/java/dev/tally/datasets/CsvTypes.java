package dev.tally.datasets;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.tally.core.cases.CaseLines;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The types of a CSV file's columns ({@code --csv-types question:json,answer:int}): every cell is a string
 * unless its column is named here. The one owner of that option's grammar and of how a cell becomes a
 * typed value.
 *
 * <ul>
 *   <li>{@code int}: a whole number in {@code long}'s range ({@code -3}, {@code 42});
 *   <li>{@code float}: a finite decimal number ({@code 0.5}, {@code 1e-3});
 *   <li>{@code bool}: {@code true} or {@code false}, in any case;
 *   <li>{@code json}: any JSON value, read as strictly as a case line;
 *   <li>{@code string}: the cell as it is (what an untyped column is).
 * </ul>
 *
 * An empty cell of a typed column is JSON {@code null} (the usual spelling of "no value" in a CSV).
 *
 * <p>Thread-safety: immutable.
 */
public final class CsvTypes {
  /** No column typed: every cell a string. */
  public static final CsvTypes NONE = new CsvTypes(Map.of());

  /** A column's type. */
  public enum Type {
    STRING,
    INT,
    FLOAT,
    BOOL,
    JSON;

    String optionName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final Map<String, Type> types;

  private CsvTypes(Map<String, Type> types) {
    this.types = Collections.unmodifiableMap(new LinkedHashMap<>(types));
  }

  /**
   * Parses the option's value: {@code COLUMN:TYPE} pairs separated by commas.
   *
   * @throws IllegalArgumentException naming the pair at fault: no {@code :}, an empty column, a column
   *     named twice, or a type that is none of {@code string}, {@code int}, {@code float}, {@code bool},
   *     {@code json}
   */
  public static CsvTypes parse(String spec) {
    Map<String, Type> types = new LinkedHashMap<>();
    for (String pair : spec.split(",", -1)) {
      int colon = pair.lastIndexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException("\"" + pair + "\" is not COLUMN:TYPE (e.g. answer:int)");
      }
      String column = pair.substring(0, colon).strip();
      String name = pair.substring(colon + 1).strip().toLowerCase(Locale.ROOT);
      Type type = Arrays.stream(Type.values()).filter(t -> t.optionName().equals(name)).findFirst()
          .orElseThrow(() -> new IllegalArgumentException("column \"" + column + "\": unknown type \"" + name
              + "\"; the types are " + Arrays.stream(Type.values()).map(Type::optionName).collect(Collectors.joining(", "))));
      if (types.put(column, type) != null) {
        throw new IllegalArgumentException("column \"" + column + "\" is typed twice");
      }
    }
    return new CsvTypes(types);
  }

  /** The typed columns' names. */
  public Set<String> columns() {
    return types.keySet();
  }

  /** Whether no column is typed. */
  public boolean isEmpty() {
    return types.isEmpty();
  }

  /**
   * A cell's value by its column's type.
   *
   * @throws IllegalArgumentException saying what the cell is not ({@code "\"x\" is not an int"})
   */
  JsonNode value(String column, String cell) {
    Type type = types.getOrDefault(column, Type.STRING);
    JsonNodeFactory nodes = JsonNodeFactory.instance;
    if (type == Type.STRING) {
      return nodes.textNode(cell);
    }
    String text = cell.strip();
    if (text.isEmpty()) {
      return nodes.nullNode();
    }
    switch (type) {
      case INT:
        try {
          return nodes.numberNode(Long.parseLong(text));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(quote(cell) + " is not an int");
        }
      case FLOAT:
        try {
          double d = Double.parseDouble(text);
          if (!Double.isFinite(d) || text.chars().anyMatch(Character::isLetter) && !text.matches("[-+0-9.]*[eE][-+]?[0-9]+")) {
            throw new NumberFormatException(); // NaN, Infinity, 0x1p3 and 1d are Java's, not a dataset's
          }
          return nodes.numberNode(d);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(quote(cell) + " is not a finite float");
        }
      case BOOL:
        if (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")) {
          return nodes.booleanNode(text.equalsIgnoreCase("true"));
        }
        throw new IllegalArgumentException(quote(cell) + " is not a bool (true or false)");
      case JSON:
        try {
          return CaseLines.parseStrict(text);
        } catch (JsonProcessingException e) {
          throw new IllegalArgumentException(quote(cell) + " is not JSON: " + dev.tally.core.JsonErrors.text(e));
        }
      default:
        throw new AssertionError(type);
    }
  }

  private static String quote(String cell) {
    return "\"" + (cell.length() > 40 ? cell.substring(0, 40) + "..." : cell) + "\"";
  }

  @Override
  public String toString() {
    return types.entrySet().stream().map(e -> e.getKey() + ":" + e.getValue().optionName()).collect(Collectors.joining(","));
  }
}
