package dev.tally.core.score;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One scorer as named on a command line, read by the one grammar of scorer specs:
 *
 * <pre>
 * spec    = kind [ ":" option *( "," option ) ]
 * kind    = a lower-case name: exact, includes, regex, numeric, choice, json
 * option  = key [ "=" value ]            a key alone is a flag: ignore-case
 * key     = [a-z][a-z0-9-]*              white space before a key is ignored
 * value   = JSON string | raw            raw: every character up to the next "," (none may be ",")
 * </pre>
 *
 * <p>A value that holds a comma, or starts with a double quote, is written as a JSON string, with JSON's
 * escapes: {@code regex:pattern="^(yes|no),"}. A raw value is taken as it is, backslashes included, so a
 * pattern needs no second escaping: {@code regex:pattern=^\d+$}. A key given twice is an error.
 *
 * <p>Examples: {@code exact}, {@code exact:ignore-case,ignore-punctuation}, {@code numeric:rel=0.01,abs=0.5},
 * {@code regex:pattern=^A,ignore-case}, {@code json:schema-file=answer.schema.json,name=shape}.
 *
 * <p>This class reads the syntax only; which kinds and options exist is {@link Scorers}'.
 *
 * @param text the spec as written
 * @param kind the scorer's kind
 * @param options the options in the order written; a flag maps to {@code null}
 */
public record ScorerSpec(String text, String kind, Map<String, String> options) {
  private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*");
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Copies {@code options}, keeping their order. */
  public ScorerSpec {
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(kind, "kind");
    options = Collections.unmodifiableMap(new LinkedHashMap<>(options));
  }

  /**
   * Reads one spec.
   *
   * @param text the spec, e.g. {@code exact:ignore-case}
   * @throws IllegalArgumentException if it breaks the grammar: the message quotes the spec and says where
   */
  public static ScorerSpec parse(String text) {
    Objects.requireNonNull(text, "text");
    int colon = text.indexOf(':');
    String kind = (colon < 0 ? text : text.substring(0, colon)).strip();
    if (!NAME.matcher(kind).matches()) {
      throw error(text, kind.isEmpty() ? "no scorer kind before the options" : "\"" + kind + "\" is not a scorer kind (lower-case letters, digits and -)");
    }
    Map<String, String> options = new LinkedHashMap<>();
    if (colon < 0) {
      return new ScorerSpec(text, kind, options);
    }
    int i = colon + 1;
    int n = text.length();
    while (true) {
      while (i < n && Character.isWhitespace(text.charAt(i))) {
        i++;
      }
      int keyStart = i;
      while (i < n && text.charAt(i) != '=' && text.charAt(i) != ',') {
        i++;
      }
      String key = text.substring(keyStart, i).strip();
      if (!NAME.matcher(key).matches()) {
        throw error(text, key.isEmpty()
            ? "an empty option at character " + (keyStart + 1)
            : "\"" + key + "\" is not an option name (lower-case letters, digits and -)");
      }
      String value = null;
      if (i < n && text.charAt(i) == '=') {
        i++;
        if (i < n && text.charAt(i) == '"') {
          int end = endOfJsonString(text, i);
          if (end < 0) {
            throw error(text, "option " + key + "'s quoted value has no closing \"");
          }
          try {
            JsonNode node = JSON.readTree(text.substring(i, end));
            value = node.textValue();
          } catch (JsonProcessingException e) {
            throw error(text, "option " + key + "'s quoted value is not a JSON string: " + dev.tally.core.JsonErrors.text(e));
          }
          i = end;
          if (i < n && text.charAt(i) != ',') {
            throw error(text, "text after option " + key + "'s quoted value at character " + (i + 1));
          }
        } else {
          int valueStart = i;
          while (i < n && text.charAt(i) != ',') {
            i++;
          }
          value = text.substring(valueStart, i);
          if (value.isEmpty()) {
            throw error(text, "option " + key + " has an empty value");
          }
        }
      }
      if (options.containsKey(key)) {
        throw error(text, "option " + key + " is given twice");
      }
      options.put(key, value);
      if (i >= n) {
        break;
      }
      i++; // the comma
      if (i >= n) {
        throw error(text, "a trailing comma");
      }
    }
    return new ScorerSpec(text, kind, options);
  }

  /**
   * This spec in the grammar, in one canonical spelling: the kind, then the options in order, a value raw
   * when it can be read back raw and a JSON string otherwise. {@code parse(spec.canonicalText())} gives an
   * equal kind and options. For sending a spec where it is parsed again (a worker).
   */
  public String canonicalText() {
    StringBuilder b = new StringBuilder(kind);
    String separator = ":";
    for (Map.Entry<String, String> option : options.entrySet()) {
      b.append(separator).append(option.getKey());
      separator = ",";
      String value = option.getValue();
      if (value != null) {
        b.append('=');
        boolean raw = !value.isEmpty() && value.indexOf(',') < 0 && value.charAt(0) != '"';
        if (raw) {
          b.append(value);
        } else {
          try {
            b.append(JSON.writeValueAsString(value));
          } catch (JsonProcessingException e) {
            throw new IllegalStateException("a string always writes as JSON", e);
          }
        }
      }
    }
    return b.toString();
  }

  /** This spec with {@code key}'s value replaced (or added last). */
  ScorerSpec with(String key, String value) {
    Map<String, String> copy = new LinkedHashMap<>(options);
    copy.put(key, value);
    ScorerSpec draft = new ScorerSpec(text, kind, copy);
    return new ScorerSpec(draft.canonicalText(), kind, copy);
  }

  /** This spec without {@code key}. */
  ScorerSpec without(String key) {
    Map<String, String> copy = new LinkedHashMap<>(options);
    copy.remove(key);
    ScorerSpec draft = new ScorerSpec(text, kind, copy);
    return new ScorerSpec(draft.canonicalText(), kind, copy);
  }

  /** The index just past the JSON string that opens at {@code start}, or -1 if it does not close. */
  private static int endOfJsonString(String text, int start) {
    for (int i = start + 1; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\\') {
        i++;
      } else if (c == '"') {
        return i + 1;
      }
    }
    return -1;
  }

  static IllegalArgumentException error(String spec, String what) {
    return new IllegalArgumentException("scorer \"" + spec + "\": " + what);
  }
}
