package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.apache.commons.text.StringTokenizer;
import org.apache.commons.text.matcher.StringMatcherFactory;

/**
 * An {@code exec} command line with {@code {field}} placeholders, split into arguments once, filled per
 * case.
 *
 * <p><b>Splitting</b> is shell-like but is not a shell: arguments are separated by whitespace, and a
 * single- or double-quoted stretch keeps its whitespace ({@code sh -c 'echo "$0"' x} is the four arguments
 * {@code sh}, {@code -c}, {@code echo "$0"}, {@code x}); inside quotes a doubled quote stands for one
 * ({@code 'it''s'} is {@code it's}). Unlike a shell, a quote opens only at the start of an argument:
 * {@code --name='a b'} is the two arguments {@code --name='a} and {@code b'}; write {@code '--name=a b'}.
 * There is no expansion of variables, globs or backslashes. Commons-text's {@link StringTokenizer} does the
 * splitting; an empty argument ({@code ''}) is dropped.
 *
 * <p><b>Filling</b> happens after splitting, so a value always stays inside the one argument its
 * placeholder was in: a case {@code {"id": "a b; rm -rf ~"}} gives {@code printf %s {id}} exactly two
 * arguments, and nothing reaches a shell unless the template itself runs one ({@code sh -c ...}; then
 * quoting the value is the template's business, e.g. pass it as {@code "$1"}). A placeholder is
 * {@code {name}} with {@code name} an identifier ({@code [A-Za-z_][A-Za-z0-9_]*}); strings are inserted as
 * they are, numbers, booleans, {@code null}, objects and arrays as their JSON text. {@code {{} and
 * {@code }}} stand for literal braces; write {@code ${{HOME}}} for a shell's {@code ${HOME}}. Other braces
 * ({@code {"a": 1}}, {@code {print $1}}) are literal.
 *
 * <p>This class is the one owner of that grammar: the command line asks it which fields a template uses
 * and whether a case has them ({@link #missingField}) before it submits a dataset.
 *
 * <p>Immutable and thread-safe.
 */
public final class CommandTemplate {
  /** One argument: literal text and placeholders, in order. */
  private record Arg(List<Part> parts) {}

  /** Literal text ({@code field == null}) or a placeholder. */
  private record Part(String literal, String field) {}

  private final String source;
  private final List<Arg> args;
  private final Set<String> fields;

  private CommandTemplate(String source, List<Arg> args) {
    this.source = source;
    this.args = args;
    Set<String> names = new LinkedHashSet<>();
    for (Arg arg : args) {
      for (Part part : arg.parts()) {
        if (part.field() != null) {
          names.add(part.field());
        }
      }
    }
    this.fields = java.util.Collections.unmodifiableSet(names);
  }

  /**
   * Splits and parses a template.
   *
   * @throws IllegalArgumentException if the template has no argument (the message quotes it)
   */
  public static CommandTemplate parse(String template) {
    Objects.requireNonNull(template, "template");
    StringTokenizer tokenizer =
        new StringTokenizer(
            template,
            StringMatcherFactory.INSTANCE.splitMatcher(),
            StringMatcherFactory.INSTANCE.quoteMatcher());
    List<Arg> args = new ArrayList<>();
    for (String token : tokenizer.getTokenList()) {
      args.add(parseArg(token));
    }
    if (args.isEmpty()) {
      throw new IllegalArgumentException("exec cmd has no command in it: '" + template + "'");
    }
    return new CommandTemplate(template, List.copyOf(args));
  }

  private static Arg parseArg(String token) {
    List<Part> parts = new ArrayList<>();
    StringBuilder literal = new StringBuilder();
    int i = 0;
    while (i < token.length()) {
      char c = token.charAt(i);
      if ((c == '{' || c == '}') && i + 1 < token.length() && token.charAt(i + 1) == c) {
        literal.append(c);
        i += 2;
        continue;
      }
      if (c == '{') {
        int end = identifierEnd(token, i + 1);
        if (end > i + 1 && end < token.length() && token.charAt(end) == '}') {
          if (literal.length() > 0) {
            parts.add(new Part(literal.toString(), null));
            literal.setLength(0);
          }
          parts.add(new Part(null, token.substring(i + 1, end)));
          i = end + 1;
          continue;
        }
      }
      literal.append(c);
      i++;
    }
    if (literal.length() > 0 || parts.isEmpty()) {
      parts.add(new Part(literal.toString(), null));
    }
    return new Arg(List.copyOf(parts));
  }

  private static int identifierEnd(String s, int from) {
    int i = from;
    while (i < s.length()) {
      char c = s.charAt(i);
      boolean ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > from && c >= '0' && c <= '9');
      if (!ok) {
        break;
      }
      i++;
    }
    return i;
  }

  /**
   * The fields the template's placeholders name, in order of first appearance; escaped braces ({@code
   * ${{HOME}}}) and braces around anything but an identifier name none.
   */
  public Set<String> fields() {
    return fields;
  }

  /**
   * The first field the template uses that {@code caseObject} lacks, if any: what {@link #fill} would
   * refuse the case for. A field whose value is JSON {@code null} is present (it is inserted as {@code
   * null}).
   *
   * @param caseObject the case's JSON object
   */
  public Optional<String> missingField(JsonNode caseObject) {
    for (String field : fields) {
      if (caseObject.get(field) == null) {
        return Optional.of(field);
      }
    }
    return Optional.empty();
  }

  /**
   * Fills the placeholders from a case.
   *
   * @param caseObject the case's JSON object
   * @return the arguments, the first being the command
   * @throws MissingFieldException if the case lacks a field a placeholder names
   */
  List<String> fill(JsonNode caseObject) throws MissingFieldException {
    Optional<String> missing = missingField(caseObject);
    if (missing.isPresent()) {
      throw new MissingFieldException(missing.get());
    }
    List<String> out = new ArrayList<>(args.size());
    for (Arg arg : args) {
      StringBuilder sb = new StringBuilder();
      for (Part part : arg.parts()) {
        if (part.field() == null) {
          sb.append(part.literal());
          continue;
        }
        JsonNode value = caseObject.get(part.field());
        sb.append(value.isTextual() ? value.textValue() : value.toString());
      }
      out.add(sb.toString());
    }
    return out;
  }

  @Override
  public String toString() {
    return source;
  }

  /** A placeholder names a field the case does not have. */
  static final class MissingFieldException extends Exception {
    private final String field;

    MissingFieldException(String field) {
      super("case has no field '" + field + "' (the cmd uses {" + field + "})");
      this.field = field;
    }

    String field() {
      return field;
    }
  }
}
