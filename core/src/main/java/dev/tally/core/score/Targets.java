package dev.tally.core.score;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/** Reads the conventional case fields as the scorers need them; each error names the scorer and field. */
final class Targets {
  static final String TARGET = "target";
  static final String CHOICES = "choices";

  private Targets() {}

  /**
   * The case's {@code target} as texts: a string is one; a list of strings (or numbers, or booleans) is each
   * of them, any of which is right; a number or boolean alone is its JSON text.
   *
   * @throws ScoringException if there is no target, it is an empty list, or it holds an object or a list
   */
  static List<String> texts(String scorer, JsonNode caseFields) {
    return texts(scorer, caseFields, TARGET);
  }

  static List<String> texts(String scorer, JsonNode caseFields, String field) {
    JsonNode node = field(scorer, caseFields, field);
    List<String> out = new ArrayList<>();
    if (node.isArray()) {
      if (node.isEmpty()) {
        throw new ScoringException(scorer + ": case field \"" + field + "\" is an empty list");
      }
      for (int i = 0; i < node.size(); i++) {
        out.add(scalar(scorer, node.get(i), field + "[" + i + "]"));
      }
    } else {
      out.add(scalar(scorer, node, field));
    }
    return out;
  }

  /** The field, present and not JSON null. */
  static JsonNode field(String scorer, JsonNode caseFields, String field) {
    JsonNode node = caseFields.get(field);
    if (node == null || node.isNull()) {
      throw new ScoringException(scorer + ": the case has no \"" + field + "\" field");
    }
    return node;
  }

  private static String scalar(String scorer, JsonNode node, String where) {
    if (node.isTextual()) {
      return node.textValue();
    }
    if (node.isNumber() || node.isBoolean()) {
      return node.asText();
    }
    throw new ScoringException(scorer + ": case field \"" + where + "\" must be a string, or a list of strings; got " + shape(node));
  }

  /** A short description of a JSON value's type, for messages. */
  static String shape(JsonNode node) {
    return switch (node.getNodeType()) {
      case OBJECT -> "an object";
      case ARRAY -> "a list";
      case STRING -> "a string";
      case NUMBER -> "a number";
      case BOOLEAN -> "a boolean";
      default -> "null";
    };
  }

  /** Quotes a text for an explanation, cut short if long. */
  static String quote(String text) {
    String t = text.length() > 80 ? text.substring(0, 79) + "…" : text;
    return "\"" + t + "\"";
  }
}
