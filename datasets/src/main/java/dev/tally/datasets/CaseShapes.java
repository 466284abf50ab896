package dev.tally.datasets;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.datasets.DatasetFormat.Shape;
import java.util.Iterator;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How a record of each {@link Shape} becomes a case with the conventional fields ({@code input}: a string or
 * chat messages; {@code target}: a string or a list of strings; {@code choices}: a list of strings; {@code
 * metadata}: an object). Every field a shape does not map is kept as it is. The one owner of these mappings;
 * each follows its harness's documented sample shape:
 *
 * <ul>
 *   <li><b>openai/evals</b> (its {@code evals/registry/data} samples): {@code input} a string or a list of
 *       chat messages ({@code role}, {@code content}); {@code ideal} a string or a list of strings, which
 *       becomes {@code target}.
 *   <li><b>Inspect</b> ({@code inspect_ai.dataset.Sample}): {@code input}, {@code target}, {@code choices},
 *       {@code id} (a string or an integer, which becomes its decimal text), {@code metadata}; {@code files},
 *       {@code setup} and {@code sandbox} kept.
 *   <li><b>promptfoo</b> (a test case of a test file): {@code vars} become top-level fields and are kept as
 *       {@code vars}; {@code assert} is kept; {@code description} becomes {@code metadata.description}; the
 *       first {@code equals} assertion's value becomes {@code target} unless a var is named so. A promptfoo
 *       CSV row: its columns are the vars, except promptfoo's reserved ones: {@code __expected},
 *       {@code __expected1}... (each an assertion written as promptfoo writes them in a cell: {@code
 *       contains:foo}, {@code not-icontains:x}, {@code similar(0.8):...}, {@code grade:...}, {@code
 *       javascript:...}; a cell with no known prefix is an {@code equals}), {@code __description}, and
 *       {@code __metadata:NAME} (which becomes {@code metadata.NAME}); other {@code __} columns are kept as
 *       top-level fields. A var list is not expanded into several cases (promptfoo's combinations).
 * </ul>
 *
 * <p>Thread-safety: stateless.
 */
final class CaseShapes {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  /** A promptfoo CSV column that holds an assertion: {@code __expected}, {@code __expected2}... */
  private static final Pattern EXPECTED_COLUMN = Pattern.compile("__expected\\d*");

  /** Assertion types promptfoo reads from a CSV cell, with an optional {@code not-} and threshold. */
  private static final Pattern ASSERTION = Pattern.compile(
      "(not-)?(equals|contains-any|contains-all|icontains-any|icontains-all|contains-json|is-json|icontains|contains"
          + "|starts-with|regex|levenshtein|similar|rouge-n|bleu|perplexity|cost|latency|is-valid-openai-function-call"
          + "|is-valid-openai-tools-call|javascript|python|llm-rubric|model-graded-closedqa|factuality|answer-relevance)"
          + "(?:\\((\\d+(?:\\.\\d+)?)\\))?(?::(.*))?",
      Pattern.DOTALL);

  private CaseShapes() {}

  /**
   * The case a record of {@code shape} is.
   *
   * @param csv whether the record is a CSV row (promptfoo's CSV columns are read then)
   * @throws RecordProblem naming the field whose value the shape does not allow
   */
  static ObjectNode toCase(Shape shape, ObjectNode record, boolean csv) throws RecordProblem {
    switch (shape) {
      case PLAIN:
        return record;
      case OPENAI_EVALS:
        return openaiEvals(record);
      case INSPECT:
        return inspect(record);
      case PROMPTFOO:
        return promptfoo(csv ? promptfooTestOfRow(record) : record);
      default:
        throw new AssertionError(shape);
    }
  }

  private static ObjectNode openaiEvals(ObjectNode sample) throws RecordProblem {
    requireInput(sample);
    if (sample.has("target") && sample.has("ideal")) {
      throw new RecordProblem("target", "an openai/evals sample's target is its \"ideal\"; it has both");
    }
    ObjectNode c = NODES.objectNode();
    for (Iterator<Map.Entry<String, JsonNode>> it = sample.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (e.getKey().equals("ideal")) {
        requireTarget("ideal", e.getValue());
        c.set("target", e.getValue());
      } else {
        c.set(e.getKey(), e.getValue());
      }
    }
    return c;
  }

  private static ObjectNode inspect(ObjectNode sample) throws RecordProblem {
    requireInput(sample);
    if (sample.has("target")) {
      requireTarget("target", sample.get("target"));
    }
    JsonNode choices = sample.get("choices");
    if (choices != null && !isStringList(choices)) {
      throw new RecordProblem("choices", "must be a list of strings, got " + brief(choices));
    }
    JsonNode metadata = sample.get("metadata");
    if (metadata != null && !metadata.isObject() && !metadata.isNull()) {
      throw new RecordProblem("metadata", "must be an object, got " + brief(metadata));
    }
    JsonNode id = sample.get("id");
    if (id != null && id.isIntegralNumber()) {
      ObjectNode c = sample.deepCopy();
      c.put("id", id.bigIntegerValue().toString()); // Inspect allows int ids; a case id is a string
      return c;
    }
    return sample;
  }

  /** A promptfoo CSV row as the test it stands for. */
  private static ObjectNode promptfooTestOfRow(ObjectNode row) throws RecordProblem {
    ObjectNode test = NODES.objectNode();
    ObjectNode vars = NODES.objectNode();
    ArrayNode asserts = NODES.arrayNode();
    ObjectNode metadata = NODES.objectNode();
    for (Iterator<Map.Entry<String, JsonNode>> it = row.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String column = e.getKey();
      JsonNode cell = e.getValue();
      if (EXPECTED_COLUMN.matcher(column).matches()) {
        if (cell.isTextual() && !cell.asText().isBlank()) {
          asserts.add(assertionOfCell(cell.asText()));
        }
      } else if (column.equals("__description")) {
        if (!cell.isNull() && !cell.asText().isEmpty()) {
          test.set("description", cell);
        }
      } else if (column.startsWith("__metadata:")) {
        metadata.set(column.substring("__metadata:".length()), cell);
      } else if (column.startsWith("__")) {
        test.set(column, cell);
      } else {
        vars.set(column, cell);
      }
    }
    test.set("vars", vars);
    if (!asserts.isEmpty()) {
      test.set("assert", asserts);
    }
    if (!metadata.isEmpty()) {
      test.set("metadata", metadata);
    }
    return test;
  }

  /** One assertion as promptfoo reads it from a CSV cell. */
  static ObjectNode assertionOfCell(String cell) {
    ObjectNode a = NODES.objectNode();
    String text = cell.strip();
    if (text.startsWith("grade:")) {
      return a.put("type", "llm-rubric").put("value", text.substring("grade:".length()).strip());
    }
    for (String prefix : new String[] {"fn:", "eval:"}) {
      if (text.startsWith(prefix)) {
        return a.put("type", "javascript").put("value", text.substring(prefix.length()).strip());
      }
    }
    Matcher m = ASSERTION.matcher(text);
    if (m.matches() && (m.group(4) != null || m.group(2).equals("is-json") || m.group(2).equals("contains-json"))) {
      a.put("type", (m.group(1) == null ? "" : "not-") + m.group(2));
      if (m.group(4) != null) {
        a.put("value", m.group(4).strip());
      }
      if (m.group(3) != null) {
        a.put("threshold", Double.parseDouble(m.group(3)));
      }
      return a;
    }
    return a.put("type", "equals").put("value", cell);
  }

  private static ObjectNode promptfoo(ObjectNode test) throws RecordProblem {
    JsonNode vars = test.get("vars");
    if (vars != null && !vars.isObject() && !vars.isNull()) {
      throw new RecordProblem("vars", "must be an object of variables, got " + brief(vars)
          + " (a vars file reference is not read; write the vars in the test)");
    }
    JsonNode asserts = test.get("assert");
    if (asserts != null && !asserts.isArray() && !asserts.isNull()) {
      throw new RecordProblem("assert", "must be a list of assertions, got " + brief(asserts));
    }
    JsonNode description = test.get("description");
    if (description != null && !description.isTextual()) {
      throw new RecordProblem("description", "must be a string, got " + brief(description));
    }
    JsonNode metadata = test.get("metadata");
    if (metadata != null && !metadata.isObject()) {
      throw new RecordProblem("metadata", "must be an object, got " + brief(metadata));
    }
    ObjectNode c = NODES.objectNode();
    if (vars != null && vars.isObject()) {
      for (Iterator<Map.Entry<String, JsonNode>> it = vars.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (test.has(e.getKey())) {
          throw new RecordProblem("vars." + e.getKey(), "a var may not have the name of a field of the test (\""
              + e.getKey() + "\")");
        }
        c.set(e.getKey(), e.getValue());
      }
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = test.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (!e.getKey().equals("description") && !e.getKey().equals("metadata")) {
        c.set(e.getKey(), e.getValue());
      }
    }
    if (description != null || metadata != null) {
      ObjectNode m = metadata == null ? NODES.objectNode() : ((ObjectNode) metadata).deepCopy();
      if (description != null) {
        m.set("description", description);
      }
      c.set("metadata", m);
    }
    if (!c.has("target") && asserts != null && asserts.isArray()) {
      for (JsonNode a : asserts) {
        JsonNode value = a.get("value");
        if (a.path("type").asText().equals("equals") && value != null && value.isValueNode() && !value.isNull()) {
          c.put("target", value.asText());
          break;
        }
      }
    }
    return c;
  }

  /** Checks the conventional {@code input}: a string, or a list of chat messages. */
  private static void requireInput(ObjectNode record) throws RecordProblem {
    JsonNode input = record.get("input");
    if (input == null) {
      throw new RecordProblem("input", "is missing");
    }
    if (input.isTextual()) {
      return;
    }
    if (!input.isArray()) {
      throw new RecordProblem("input", "must be a string or a list of chat messages, got " + brief(input));
    }
    int i = 0;
    for (JsonNode message : input) {
      String place = "input[" + i++ + "]";
      if (!message.isObject()) {
        throw new RecordProblem(place, "a chat message must be an object with \"role\" and \"content\", got " + brief(message));
      }
      if (!message.path("role").isTextual()) {
        throw new RecordProblem(place + ".role", "must be a string (system, user, assistant...), got " + brief(message.get("role")));
      }
      JsonNode content = message.get("content");
      if (content != null && !content.isTextual() && !content.isArray() && !content.isNull()) {
        throw new RecordProblem(place + ".content", "must be a string or a list of content parts, got " + brief(content));
      }
    }
  }

  /** Checks a target: a string, or a list of strings (any one is right). */
  private static void requireTarget(String field, JsonNode target) throws RecordProblem {
    if (!target.isTextual() && !isStringList(target)) {
      throw new RecordProblem(field, "must be a string or a list of strings, got " + brief(target));
    }
  }

  private static boolean isStringList(JsonNode node) {
    if (!node.isArray()) {
      return false;
    }
    for (JsonNode e : node) {
      if (!e.isTextual()) {
        return false;
      }
    }
    return true;
  }

  /** A value for a message, cut short. */
  static String brief(JsonNode node) {
    if (node == null) {
      return "nothing";
    }
    String text = node.toString();
    return text.length() > 60 ? text.substring(0, 60) + "..." : text;
  }
}
