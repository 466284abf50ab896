package dev.tally.core.score;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaException;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.tally.core.cases.CaseLines;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * {@code json}: the answer is JSON, and one of:
 *
 * <ul>
 *   <li>(default) it equals the case's {@code target} as JSON: a target that is a string is read as JSON
 *       text ({@code "{\"a\": 1}"}), any other target is the value itself. Key order does not matter;
 *       numbers compare by value (1 equals 1.0);
 *   <li>{@code schema-file=PATH}: it is valid against that JSON Schema, read once when the specs are parsed
 *       (through {@link ScorerFiles});
 *   <li>{@code schema=JSON}: it is valid against this JSON Schema, given in the spec (quoted, since it
 *       holds commas: {@code json:schema="{\"type\":\"object\"}"}); what {@link
 *       Scorers#withFilesInlined} makes of a {@code schema-file};
 *   <li>{@code schema-field=FIELD}: it is valid against the schema in the case's field {@code FIELD} (an
 *       object, or JSON text of one);
 *   <li>{@code parses}: it is JSON at all.
 * </ul>
 *
 * <p>The answer is read as strictly as a case line ({@link CaseLines#parseStrict}: one value, no repeated
 * key); white space around it and a Markdown code fence around it ({@code ```json ... ```}) are ignored.
 * Schemas are validated by networknt's json-schema-validator; a schema without {@code $schema} is read as
 * draft 2020-12, and no remote {@code $ref} is ever fetched (a scorer does no I/O).
 *
 * <p>Thread-safety: immutable; the validator's schemas are safe to share between threads.
 */
final class JsonScorer implements Scorer {
  static final String KIND = "json";
  static final String SCHEMA = "schema";
  static final String SCHEMA_FILE = "schema-file";
  static final String SCHEMA_FIELD = "schema-field";
  static final String PARSES = "parses";

  /** Errors quoted in a failing explanation: the first few say what is wrong; the rest would be noise. */
  private static final int ERRORS_SHOWN = 3;

  /** The dialect of a schema that names none ({@code $schema}): draft 2020-12. */
  static final SpecificationVersion DEFAULT_DIALECT = SpecificationVersion.DRAFT_2020_12;
  /** How many of a schema's breaks of its meta-schema an error lists. */
  static final int META_ERRORS_SHOWN = 3;

  private static final SchemaRegistry SCHEMAS = SchemaRegistry.withDefaultDialect(
      DEFAULT_DIALECT, b -> b.schemaLoader(l -> l.fetchRemoteResources(false)));

  private static final Pattern FENCE = Pattern.compile("(?s)^```[A-Za-z0-9_-]*\\s*\\n(.*?)\\n?```$");

  /**
   * Numbers equal in value, everything else as Jackson compares it. A number beyond a double's range was
   * read as an infinity, which has no exact value: it equals nothing.
   */
  private static final Comparator<JsonNode> NUMBERS_BY_VALUE = (a, b) -> {
    if (a.isNumber() && b.isNumber()) {
      if (!finite(a) || !finite(b)) {
        return 1;
      }
      BigDecimal x = a.decimalValue();
      BigDecimal y = b.decimalValue();
      return x.compareTo(y);
    }
    return a.equals(b) ? 0 : 1;
  };

  private enum Mode { TARGET, FIXED_SCHEMA, SCHEMA_FIELD, PARSES }

  private final String name;
  private final Mode mode;
  private final Schema fixedSchema;
  private final String schemaField;

  private JsonScorer(String name, Mode mode, Schema fixedSchema, String schemaField) {
    this.name = name;
    this.mode = mode;
    this.fixedSchema = fixedSchema;
    this.schemaField = schemaField;
  }

  static Scorer of(Scorers.Context c) {
    int modes = (c.flag(SCHEMA) ? 1 : 0) + (c.flag(SCHEMA_FILE) ? 1 : 0) + (c.flag(SCHEMA_FIELD) ? 1 : 0) + (c.flag(PARSES) ? 1 : 0);
    if (modes > 1) {
      throw c.error("give at most one of " + SCHEMA + ", " + SCHEMA_FILE + ", " + SCHEMA_FIELD + " and " + PARSES);
    }
    if (c.flag(PARSES)) {
      return new JsonScorer(c.name(), Mode.PARSES, null, null);
    }
    if (c.flag(SCHEMA_FIELD)) {
      return new JsonScorer(c.name(), Mode.SCHEMA_FIELD, null, c.value(SCHEMA_FIELD));
    }
    if (c.flag(SCHEMA_FILE)) {
      return new JsonScorer(c.name(), Mode.FIXED_SCHEMA, checkedSchema(c, readSchemaFile(c, c.value(SCHEMA_FILE)), SCHEMA_FILE + " " + c.value(SCHEMA_FILE)), null);
    }
    if (c.flag(SCHEMA)) {
      JsonNode schema;
      try {
        schema = CaseLines.parseStrict(c.value(SCHEMA));
      } catch (JsonProcessingException e) {
        throw c.error(SCHEMA + " is not JSON: " + dev.tally.core.JsonErrors.text(e));
      }
      return new JsonScorer(c.name(), Mode.FIXED_SCHEMA, checkedSchema(c, schema, SCHEMA), null);
    }
    return new JsonScorer(c.name(), Mode.TARGET, null, null);
  }

  /** The JSON of a schema file, read through the context's {@link ScorerFiles}. */
  static JsonNode readSchemaFile(Scorers.Context c, String path) {
    String text;
    try {
      text = c.files().read(path);
    } catch (IOException e) {
      throw c.error("cannot read " + SCHEMA_FILE + " " + path + ": " + e.getMessage());
    }
    try {
      return CaseLines.parseStrict(text);
    } catch (JsonProcessingException e) {
      throw c.error(SCHEMA_FILE + " " + path + " is not JSON: " + dev.tally.core.JsonErrors.text(e));
    }
  }

  private static Schema checkedSchema(Scorers.Context c, JsonNode node, String what) {
    try {
      return schema(node);
    } catch (SchemaException | IllegalArgumentException e) {
      throw c.error(what + " is not a JSON Schema: " + e.getMessage());
    }
  }

  /**
   * {@code node} as a schema, once it is valid against its dialect's meta-schema (the one its {@code
   * $schema} names, else draft 2020-12's; both bundled with the validator, never fetched). Without that check
   * a schema such as {@code {"type": 5}} was taken, and then failed every answer with an error about the
   * schema, as if the answers were wrong.
   *
   * @throws IllegalArgumentException if {@code node} is neither an object nor a boolean, if its {@code
   *     $schema} names a dialect the validator does not hold, or if it breaks its meta-schema (the message
   *     lists up to {@value #META_ERRORS_SHOWN} of the places, as JSON pointers)
   */
  private static Schema schema(JsonNode node) {
    if (!node.isObject() && !node.isBoolean()) {
      throw new IllegalArgumentException("a schema is an object or a boolean, not " + Targets.shape(node));
    }
    JsonNode named = node.path("$schema");
    SpecificationVersion dialect = named.isTextual() ? dialect(named.asText()).orElseThrow(() -> new IllegalArgumentException(
        "its $schema " + named.asText() + " is none of the drafts the validator holds (4, 6, 7, 2019-09, 2020-12;"
            + " nothing is fetched)")) : DEFAULT_DIALECT;
    Schema meta = SCHEMAS.getSchema(SchemaLocation.of(dialect.getDialectId()));
    List<Error> broken = meta.validate(node);
    if (!broken.isEmpty()) {
      throw new IllegalArgumentException(broken.stream().limit(META_ERRORS_SHOWN).map(Error::toString)
          .collect(Collectors.joining("; ")) + (broken.size() > META_ERRORS_SHOWN ? "; and " + (broken.size() - META_ERRORS_SHOWN) + " more" : ""));
    }
    try {
      // Every keyword's value read (a pattern compiled) and every $ref resolved now: a reference that
      // cannot be resolved (nothing is fetched) is the schema's fault, said before the run, not each case's.
      Schema schema = SCHEMAS.getSchema(node);
      schema.initializeValidators();
      return schema;
    } catch (SchemaException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new IllegalArgumentException(cause instanceof java.io.FileNotFoundException
          ? "it refers to " + cause.getMessage() + ", which is not in the schema (nothing is fetched)"
          : cause instanceof java.util.regex.PatternSyntaxException p ? "a pattern is not a regular expression: "
              + p.getDescription() + " at index " + p.getIndex() + " of " + p.getPattern()
          : String.valueOf(cause.getMessage()));
    }
  }

  /**
   * The draft a {@code $schema} names, however it is spelled: with or without its final {@code #}, over
   * http or https ({@code http://json-schema.org/draft-07/schema} is draft 7, as the validator took it
   * before the meta-schema check).
   */
  static java.util.Optional<SpecificationVersion> dialect(String named) {
    String wanted = named.strip().replaceFirst("#$", "").replaceFirst("^https?://", "");
    return java.util.Arrays.stream(SpecificationVersion.values())
        .filter(v -> v.getDialectId().replaceFirst("#$", "").replaceFirst("^https?://", "").equals(wanted)).findFirst();
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ScoreResult score(JsonNode caseFields, String answer) {
    // The case's own fields are checked first, so a case that cannot be scored is an error whatever the answer.
    JsonNode target = mode == Mode.TARGET ? target(caseFields) : null;
    Schema schema = switch (mode) {
      case FIXED_SCHEMA -> fixedSchema;
      case SCHEMA_FIELD -> caseSchema(caseFields);
      default -> null;
    };
    String text = unfenced((answer == null ? "" : answer).strip());
    JsonNode value;
    try {
      value = CaseLines.parseStrict(text);
    } catch (JsonProcessingException e) {
      return ScoreResult.fail(null, "not JSON: " + dev.tally.core.JsonErrors.text(e));
    }
    if (value == null || value.isMissingNode()) {
      return ScoreResult.fail(null, "not JSON: the answer is empty");
    }
    String read = value.toString();
    switch (mode) {
      case PARSES:
        return ScoreResult.pass(read, "is JSON");
      case TARGET:
        return value.equals(NUMBERS_BY_VALUE, target)
            ? ScoreResult.pass(read, "equals the target as JSON")
            : ScoreResult.fail(read, "differs from the target " + Targets.quote(target.toString()));
      default:
        List<Error> errors;
        try {
          errors = schema.validate(value);
        } catch (SchemaException e) {
          // A $ref that cannot be resolved (remote fetching is off) is found only now, as the schema is used.
          throw new ScoringException(KIND + ": " + schemaName() + " cannot be used: " + e.getMessage());
        } catch (StackOverflowError e) {
          throw new ScoringException(KIND + ": " + schemaName() + " refers to itself without end (a $ref cycle)");
        }
        if (errors.isEmpty()) {
          return ScoreResult.pass(read, "valid against the schema");
        }
        return ScoreResult.fail(read, errors.size() + (errors.size() == 1 ? " schema error: " : " schema errors: ")
            + errors.stream().limit(ERRORS_SHOWN).map(Error::toString).collect(Collectors.joining("; ")));
    }
  }

  private static JsonNode target(JsonNode caseFields) {
    JsonNode node = Targets.field(KIND, caseFields, Targets.TARGET);
    if (!node.isTextual()) {
      return node;
    }
    try {
      JsonNode parsed = CaseLines.parseStrict(node.textValue());
      if (parsed == null || parsed.isMissingNode()) {
        throw new ScoringException(KIND + ": case field \"target\" is an empty string, not JSON text");
      }
      return parsed;
    } catch (JsonProcessingException e) {
      throw new ScoringException(KIND + ": case field \"target\" is a string but not JSON text (write the JSON string \"\\\"...\\\"\" for a string): "
          + dev.tally.core.JsonErrors.text(e));
    }
  }

  private Schema caseSchema(JsonNode caseFields) {
    JsonNode node = Targets.field(KIND, caseFields, schemaField);
    if (node.isTextual()) {
      try {
        node = CaseLines.parseStrict(node.textValue());
      } catch (JsonProcessingException e) {
        throw new ScoringException(KIND + ": case field \"" + schemaField + "\" is not JSON text: " + dev.tally.core.JsonErrors.text(e));
      }
    }
    try {
      return schema(node);
    } catch (SchemaException | IllegalArgumentException e) {
      throw new ScoringException(KIND + ": case field \"" + schemaField + "\" is not a JSON Schema: " + e.getMessage());
    }
  }

  private static boolean finite(JsonNode number) {
    return !number.isFloatingPointNumber() || Double.isFinite(number.doubleValue());
  }

  /** The schema as the scorer's spec or the case names it, for a message. */
  private String schemaName() {
    return mode == Mode.SCHEMA_FIELD ? "the schema in case field \"" + schemaField + "\"" : "the schema";
  }

  private static String unfenced(String text) {
    Matcher m = FENCE.matcher(text);
    return m.matches() ? m.group(1).strip() : text;
  }
}
