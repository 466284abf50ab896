package dev.tally.core.cases;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * How a field path such as {@code meta.lang} or {@code choices.0.text} finds a value in a case: the one rule
 * of a template's placeholders ({@code {meta.lang}} in {@code --cmd} and {@code --prompt}) and of {@code
 * --group-by}, so that a path that works in one works in the other. Stateless; thread-safe.
 */
public final class FieldPath {
  private FieldPath() {}

  /** The most digits of an array index in a path. */
  public static final int MAX_INDEX_DIGITS = 9;

  /**
   * The value {@code path} names in {@code caseObject}, or null if there is none. A member whose name is the
   * whole path ({@code "a.b"}) is that value; else each step of the path (split at every dot) looks up a
   * member of the value so far: in an object, the member of that name; in an array, the element a step
   * indexes ({@link #elementAt}). Anything else (a step into a string, a number or {@code null}, an index past
   * the end, a member that is not there) finds nothing.
   *
   * @param caseObject the case's JSON object
   * @param path a field path: {@code id}, {@code meta.lang}, {@code choices.0}
   * @return the value (a JSON {@code null} is a value), or null
   */
  public static JsonNode valueAt(JsonNode caseObject, String path) {
    JsonNode whole = caseObject.get(path);
    if (whole != null) {
      return whole; // a flat "a.b": the case's own name for it wins over the path
    }
    JsonNode node = caseObject;
    int start = 0;
    while (node != null) {
      int dot = path.indexOf('.', start);
      String step = dot < 0 ? path.substring(start) : path.substring(start, dot);
      node = step(node, step);
      if (dot < 0) {
        return node;
      }
      start = dot + 1;
    }
    return null;
  }

  /**
   * One step of a path from {@code node}: an object's member of that name, an array's element ({@link
   * #elementAt}), or null.
   */
  public static JsonNode step(JsonNode node, String step) {
    return node.isArray() ? elementAt(node, step) : node.get(step);
  }

  /**
   * The element of {@code array} that {@code step} indexes, or null: an index is written in decimal with no
   * leading zero (so that one element has one name: {@code 01} is no index, as in JSON Pointer, RFC 6901)
   * and at most {@value #MAX_INDEX_DIGITS} digits.
   */
  public static JsonNode elementAt(JsonNode array, String step) {
    if (step.isEmpty() || step.length() > MAX_INDEX_DIGITS || !step.chars().allMatch(c -> c >= '0' && c <= '9')
        || step.length() > 1 && step.charAt(0) == '0') {
      return null;
    }
    return array.get(Integer.parseInt(step));
  }
}
