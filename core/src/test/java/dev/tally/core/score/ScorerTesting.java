package dev.tally.core.score;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.util.List;

/** Helpers for the scorer tests: one scorer from a spec, a case from JSON text. */
final class ScorerTesting {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ScorerTesting() {}

  static Scorer scorer(String spec) {
    return Scorers.parse(List.of(spec)).get(0);
  }

  static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A case whose target is the given JSON value. */
  static JsonNode target(String targetJson) {
    return json("{\"id\":\"c1\",\"target\":" + targetJson + "}");
  }

  static ScoreResult score(String spec, String caseJson, String answer) {
    return scorer(spec).score(json(caseJson), answer);
  }
}
