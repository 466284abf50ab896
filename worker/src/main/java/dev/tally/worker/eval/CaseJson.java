package dev.tally.worker.eval;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** Parsing of a case's JSON object, shared by the evaluators. Thread-safe. */
final class CaseJson {
  /** Thread-safe once configured; shared because an ObjectMapper is costly to build. */
  static final ObjectMapper MAPPER = new ObjectMapper();

  private CaseJson() {}

  /**
   * Parses a case.
   *
   * @throws IllegalArgumentException if {@code json} is not a JSON object, with the parser's reason
   */
  static JsonNode parseObject(String json) {
    JsonNode node;
    try {
      node = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("case is not valid JSON: " + dev.tally.core.JsonErrors.text(e), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException(
          "case must be a JSON object, got " + (node == null ? "nothing" : node.getNodeType()));
    }
    return node;
  }
}
