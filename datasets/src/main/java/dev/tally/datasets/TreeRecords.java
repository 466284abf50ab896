package dev.tally.datasets;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.cases.CaseSourceException;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;

/**
 * The records of a JSON array or a YAML sequence, streamed element by element through Jackson's parser, so
 * that a large JSON array is never whole in memory (a YAML file is bounded by {@link
 * DatasetReader#MAX_YAML_CODE_POINTS}). The top level is a sequence of objects, or an object whose {@code
 * tests} field is one (a promptfoo configuration); each element's line is the line it starts on.
 *
 * <p>Thread-safety: none.
 */
final class TreeRecords implements RecordStream {
  /** The field of a top-level object that holds the records (promptfoo's configuration keeps its tests there). */
  static final String TESTS_FIELD = "tests";

  private final JsonParser parser;
  private final ObjectMapper mapper;
  private final String name;
  private boolean started;
  private boolean done;
  /** Whether the records are the top-level list (nothing may follow it), not a field of an object. */
  private boolean topLevel;

  TreeRecords(JsonFactory factory, InputStream in, String name) throws CaseSourceException {
    this.name = name;
    this.mapper = new ObjectMapper(factory);
    try {
      this.parser = factory.createParser(in);
    } catch (IOException e) {
      throw new CaseSourceException(name, 0, CaseSourceException.cannotRead(e));
    }
    parser.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
  }

  @Override
  public RawRecord next() throws CaseSourceException {
    if (done) {
      return null;
    }
    try {
      if (!started) {
        started = true;
        start();
      }
      JsonToken token = parser.nextToken();
      int line = parser.currentTokenLocation().getLineNr();
      if (token == JsonToken.END_ARRAY) {
        done = true;
        if (topLevel && parser.nextToken() != null) {
          throw new CaseSourceException(name, parser.currentTokenLocation().getLineNr(), "text after the list of records");
        }
        return null;
      }
      if (token != JsonToken.START_OBJECT) {
        throw new CaseSourceException(name, line, "expected an object as a record, got " + describe(token));
      }
      JsonNode node = mapper.readTree(parser);
      return new RawRecord(line, 0, (ObjectNode) node, null);
    } catch (JsonProcessingException e) {
      for (Throwable c = e; c != null; c = c.getCause()) {
        if (c instanceof org.yaml.snakeyaml.reader.ReaderException r) {
          // SnakeYAML refuses the character as it reads ahead, before its line is known: the location Jackson
          // gives is the reader's (line 1), so the place is said by the character's position instead.
          throw new CaseSourceException(name, 0, String.format(java.util.Locale.ROOT, "character %d of the file is U+%04X,"
              + " which YAML does not allow (a control character other than tab, line feed or carriage return)",
              r.getPosition() + 1, r.getCodePoint()));
        }
      }
      throw new CaseSourceException(name, e.getLocation() == null ? 0 : e.getLocation().getLineNr(),
          "not valid: " + dev.tally.core.JsonErrors.text(e));
    } catch (IOException e) {
      throw new CaseSourceException(name, 0, CaseSourceException.cannotRead(e));
    }
  }

  /** Moves to the records' sequence: the top level, or the top-level object's {@code tests}. */
  private void start() throws IOException, CaseSourceException {
    JsonToken token = parser.nextToken();
    if (token == null) {
      done = true; // an empty file: no records
      return;
    }
    if (token == JsonToken.START_ARRAY) {
      topLevel = true;
      return;
    }
    int line = parser.currentTokenLocation().getLineNr();
    if (token == JsonToken.START_OBJECT) {
      while ((token = parser.nextToken()) == JsonToken.FIELD_NAME) {
        String field = parser.currentName();
        JsonToken value = parser.nextToken();
        if (field.equals(TESTS_FIELD)) {
          if (value != JsonToken.START_ARRAY) {
            throw new CaseSourceException(name, parser.currentTokenLocation().getLineNr(),
                "field \"" + TESTS_FIELD + "\": expected a list of records, got " + describe(value));
          }
          return;
        }
        parser.skipChildren();
      }
      throw new CaseSourceException(name, line, "expected a list of records, or an object with a \"" + TESTS_FIELD
          + "\" list; the object has no \"" + TESTS_FIELD + "\"");
    }
    throw new CaseSourceException(name, line, "expected a list of records, got " + describe(token));
  }

  private static String describe(JsonToken token) {
    if (token == null) {
      return "the end of the file";
    }
    switch (token) {
      case START_ARRAY:
        return "a list";
      case START_OBJECT:
        return "an object";
      case VALUE_STRING:
        return "a string";
      case VALUE_NUMBER_INT:
      case VALUE_NUMBER_FLOAT:
        return "a number";
      case VALUE_TRUE:
      case VALUE_FALSE:
        return "a boolean";
      case VALUE_NULL:
        return "null";
      default:
        return token.name().toLowerCase(Locale.ROOT);
    }
  }

  @Override
  public void close() throws IOException {
    parser.close();
  }
}
