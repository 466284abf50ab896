package dev.tally.http;

import dev.tally.core.store.NewRun;
import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.DurationText;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.worker.eval.CommandTemplate;
import dev.tally.worker.eval.EvaluatorFactory;
import dev.tally.worker.eval.ModelSettings;
import dev.tally.worker.eval.ServeEvaluator;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a {@code POST /api/v1/runs} says besides its cases: {@code {"name": ..., "evaluator": {"kind":
 * "exec", "cmd": "...", "serve": false} | {"kind": "model", "baseUrl": "...", "model": "...", ...} | {"kind": "sleep", "millis": N} |
 * {"kind": "noop"}, "settings": {"maxAttempts": N,
 * "timeoutRetries": N, "caseTimeout": "10m"}}}. Every field but {@code evaluator} may be left out (the
 * settings' defaults are {@code tally run}'s: {@link AttemptLimits#DEFAULT_MAX_ATTEMPTS}, {@link
 * AttemptLimits#DEFAULT_TIMEOUT_RETRIES}, the coordinator builder's case timeout); a field Tally does not
 * know is refused, naming it, so a typo ({@code maxAttempt}) is not silently ignored. The evaluator is
 * checked by its owner ({@link EvaluatorFactory}), as a worker would check it.
 *
 * @param name the run's name (may be empty)
 * @param evaluator the evaluator, its options and the case timeout
 * @param limits attempts and timeout retries
 * @param fields the fields the evaluator's cmd or prompt needs of each case, to check them before the run; null
 *     for an evaluator without a template
 */
record Submission(String name, EvaluatorSpec evaluator, AttemptLimits limits, dev.tally.worker.eval.CaseFields fields) {
  Submission {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(evaluator, "evaluator");
    Objects.requireNonNull(limits, "limits");
  }

  /**
   * Reads the submission's fields.
   *
   * @param body the JSON object (an NDJSON body's first line, or a JSON body without its {@code cases})
   * @param line the body line it is on (1 for NDJSON), or 0 for a JSON body (places are then fields only)
   * @param defaultCaseTimeout the case timeout when the body gives none
   * @throws ProblemException 400 naming the field (and line) at fault
   */
  static Submission parse(JsonNode body, long line, Duration defaultCaseTimeout) {
    Fields f = new Fields(line);
    if (body == null || !body.isObject()) {
      throw f.problem("", "the run must be a JSON object with an evaluator, e.g. {\"evaluator\": {\"kind\": \"noop\"}}");
    }
    // An NDJSON body's cases are its other lines; only a JSON body has them inline.
    f.onlyKnown(body, "", line > 0 ? List.of("name", "evaluator", "scorers", "settings")
        : List.of("name", "evaluator", "scorers", "settings", "cases"));
    String name = "";
    if (body.has("name") && !body.get("name").isNull()) {
      JsonNode n = body.get("name");
      if (!n.isTextual()) {
        throw f.problem("/name", "name must be a string");
      }
      name = n.asText();
      java.util.Optional<String> problem = NewRun.nameProblem(name);
      if (problem.isPresent()) {
        throw f.problem("/name", "name: " + problem.get());
      }
    }
    JsonNode settings = body.get("settings");
    int maxAttempts = AttemptLimits.DEFAULT_MAX_ATTEMPTS;
    int timeoutRetries = AttemptLimits.DEFAULT_TIMEOUT_RETRIES;
    String failFast = null;
    Duration caseTimeout = defaultCaseTimeout;
    if (settings != null && !settings.isNull()) {
      if (!settings.isObject()) {
        throw f.problem("/settings", "settings must be an object");
      }
      f.onlyKnown(settings, "/settings", List.of("maxAttempts", "timeoutRetries", "caseTimeout", "failFast"));
      maxAttempts = f.integer(settings, "/settings", "maxAttempts", 1, maxAttempts);
      if (settings.hasNonNull("failFast")) {
        int cases = f.integer(settings, "/settings", "failFast", 0, EvaluatorSpec.DEFAULT_FAIL_FAST_CASES);
        try {
          failFast = EvaluatorSpec.failFastOption(cases);
        } catch (IllegalArgumentException e) {
          throw f.problem("/settings/failFast", e.getMessage());
        }
      }
      timeoutRetries = f.integer(settings, "/settings", "timeoutRetries", 0, timeoutRetries);
      JsonNode timeout = settings.get("caseTimeout");
      if (timeout != null && !timeout.isNull()) {
        if (!timeout.isTextual()) {
          throw f.problem("/settings/caseTimeout", "caseTimeout must be a duration string such as \"10m\" or \"30s\"");
        }
        try {
          caseTimeout = DurationText.parse(timeout.asText());
        } catch (IllegalArgumentException e) {
          throw f.problem("/settings/caseTimeout", "caseTimeout: " + e.getMessage());
        }
        try {
          EvaluatorSpec.checkCaseTimeout(caseTimeout);
        } catch (IllegalArgumentException e) {
          throw f.problem("/settings/caseTimeout", "caseTimeout " + e.getMessage());
        }
      }
    }
    JsonNode evaluator = body.get("evaluator");
    if (evaluator == null || evaluator.isNull()) {
      throw f.problem("/evaluator", "the run needs an evaluator: {\"kind\": \"exec\", \"cmd\": \"...\"}, {\"kind\": \"sleep\"} or {\"kind\": \"noop\"}");
    }
    if (!evaluator.isObject()) {
      throw f.problem("/evaluator", "evaluator must be an object with a kind");
    }
    JsonNode kindNode = evaluator.get("kind");
    if (kindNode == null || !kindNode.isTextual() || !EvaluatorFactory.KINDS.contains(kindNode.asText())) {
      throw f.problem("/evaluator/kind", "evaluator.kind must be one of " + String.join(", ", EvaluatorFactory.KINDS)
          + (kindNode == null ? "" : ", got " + kindNode));
    }
    String kind = kindNode.asText();
    Map<String, String> options = new LinkedHashMap<>();
    switch (kind) {
      case "exec" -> {
        f.onlyKnown(evaluator, "/evaluator", List.of("kind", "cmd", ServeEvaluator.OPTION));
        JsonNode cmd = evaluator.get("cmd");
        if (cmd == null || !cmd.isTextual() || cmd.asText().isBlank()) {
          throw f.problem("/evaluator/cmd", "exec needs cmd, the command per case, e.g. \"python3 -m test {id}\"");
        }
        try {
          CommandTemplate.parse(cmd.asText()); // the worker's own grammar, refused here with the field
        } catch (IllegalArgumentException e) {
          throw f.problem("/evaluator/cmd", "cmd: " + e.getMessage());
        }
        options.put("cmd", cmd.asText());
        JsonNode serve = evaluator.get(ServeEvaluator.OPTION);
        if (serve != null && !serve.isNull()) {
          if (!serve.isBoolean()) {
            throw f.problem("/evaluator/" + ServeEvaluator.OPTION, "serve must be true or false, got " + serve);
          }
          if (serve.booleanValue()) {
            options.put(ServeEvaluator.OPTION, "true");
            try {
              EvaluatorFactory.create(kind, options); // the worker's own check: no placeholders
            } catch (IllegalArgumentException e) {
              throw f.problem("/evaluator/cmd", e.getMessage());
            }
          }
        }
      }
      case "sleep" -> {
        f.onlyKnown(evaluator, "/evaluator", List.of("kind", "millis"));
        JsonNode millis = evaluator.get("millis");
        if (millis != null && !millis.isNull()) {
          if (!millis.canConvertToLong() || !millis.isIntegralNumber() || millis.asLong() < 0) {
            throw f.problem("/evaluator/millis", "millis must be a whole number >= 0, got " + millis);
          }
          options.put("millis", Long.toString(millis.asLong()));
        }
      }
      case "model" -> {
        List<String> known = new java.util.ArrayList<>(List.of("kind"));
        known.addAll(ModelSettings.jsonNames());
        f.onlyKnown(evaluator, "/evaluator", known);
        try {
          options.putAll(ModelSettings.fromJson(evaluator));
          ModelSettings.parse(options); // the worker's own checks, answered with the field at fault
        } catch (ModelSettings.OptionException e) {
          throw f.problem(e.option() == null ? "/evaluator" : "/evaluator/" + e.option().jsonName, e.getMessage());
        }
      }
      default -> f.onlyKnown(evaluator, "/evaluator", List.of("kind"));
    }
    if (failFast != null) {
      options.put(EvaluatorSpec.FAIL_FAST_OPTION, failFast);
    }
    JsonNode scorers = body.get("scorers");
    if (scorers != null && !scorers.isNull()) {
      options.put(dev.tally.core.score.Scorers.OPTION, scorers(scorers, f).optionValue());
    }
    try {
      EvaluatorFactory.create(kind, options); // what a worker will do with it, checked now
      EvaluatorSpec spec = new EvaluatorSpec(kind, options, caseTimeout);
      return new Submission(name, spec, new AttemptLimits(maxAttempts, timeoutRetries),
          dev.tally.worker.eval.CaseFields.of(spec).orElse(null)); // the cmd's or the prompt's fields
    } catch (IllegalArgumentException e) {
      throw f.problem("/evaluator", e.getMessage());
    }
  }

  /**
   * Reads a body's {@code scorers} field: a non-empty array of scorer specs, checked by their parser ({@link
   * dev.tally.core.score.Scorers}). No file is read on the server: a client inlines a schema file ({@code tally
   * submit} does).
   *
   * @param scorers the field's value; null when the body has none
   * @param line the body line it is on, or 0 for a JSON body
   * @return the judge of those scorers
   * @throws ProblemException 400 naming {@code /scorers}, or the spec at fault ({@code /scorers/1}: the first
   *     spec the parser refuses, with its message)
   */
  static dev.tally.core.score.Judge scorers(JsonNode scorers, long line) {
    return scorers(scorers, new Fields(line));
  }

  private static dev.tally.core.score.Judge scorers(JsonNode scorers, Fields f) {
    if (scorers == null || !scorers.isArray() || scorers.isEmpty()) {
      throw f.problem("/scorers", "scorers must be a non-empty array of scorer specs, e.g. [\"exact:ignore-case\"]");
    }
    List<String> specs = new java.util.ArrayList<>();
    for (int i = 0; i < scorers.size(); i++) {
      if (!scorers.get(i).isTextual()) {
        throw f.problem("/scorers/" + i, "a scorer spec is a string, e.g. \"numeric:rel=0.01\"");
      }
      specs.add(scorers.get(i).asText());
      try {
        // Each spec with those before it: a spec's own fault, or a name taken by an earlier one, is its place.
        dev.tally.core.score.Scorers.parse(specs);
      } catch (IllegalArgumentException e) {
        throw f.problem("/scorers/" + i, e.getMessage());
      }
    }
    return dev.tally.core.score.Judge.of(specs);
  }

  /** The first field the evaluator's template (its cmd or its prompt) needs that {@code caseObject} lacks, if any. */
  Optional<String> missingField(JsonNode caseObject) {
    return fields == null ? Optional.empty() : fields.missingField().apply(caseObject);
  }

  /** Reads fields of one JSON object, refusing with the place: the field's JSON pointer, and the line. */
  private record Fields(long line) {
    ProblemException problem(String pointer, String detail) {
      String at = pointer.isEmpty() ? "" : pointer + ": ";
      return line > 0 ? ProblemException.line(ProblemType.INVALID_REQUEST, line, pointer.isEmpty() ? null : pointer,
          "request body line " + line + ": " + at + detail)
          : ProblemException.field(ProblemType.INVALID_REQUEST, pointer.isEmpty() ? null : pointer, at + detail);
    }

    void onlyKnown(JsonNode object, String pointer, List<String> known) {
      for (Iterator<String> names = object.fieldNames(); names.hasNext(); ) {
        String name = names.next();
        if (!known.contains(name)) {
          throw problem(pointer + "/" + name, "unknown field '" + name + "'; "
              + (pointer.isEmpty() ? "a run" : pointer.substring(1)) + " takes " + String.join(", ", known));
        }
      }
    }

    int integer(JsonNode object, String pointer, String field, int min, int absent) {
      JsonNode n = object.get(field);
      if (n == null || n.isNull()) {
        return absent;
      }
      if (!n.isIntegralNumber() || !n.canConvertToInt() || n.asInt() < min) {
        // Both ends said: "must be >= 1, got 2147483648" named a rule the value met.
        throw problem(pointer + "/" + field, field + " must be a whole number from " + min + " to " + Integer.MAX_VALUE
            + ", got " + n);
      }
      return n.asInt();
    }
  }
}
