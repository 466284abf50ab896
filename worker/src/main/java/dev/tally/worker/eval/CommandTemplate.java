package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * An {@code exec} command line with {@code {field}} placeholders, split into arguments once, filled per
 * case. The one owner of the template grammar: the command line asks it which fields a template uses, and
 * whether a case has them ({@link #missingField}), before it submits a dataset; {@link #parse} refuses a
 * template the worker could not run safely.
 *
 * <p><b>Splitting</b> is shell-like but is not a shell: arguments are separated by whitespace, and a
 * single- or double-quoted stretch keeps its whitespace ({@code sh -c 'echo "$0"' x} is the four arguments
 * {@code sh}, {@code -c}, {@code echo "$0"}, {@code x}); inside quotes a doubled quote stands for one
 * ({@code 'it''s'} is {@code it's}). Unlike a shell, a quote opens only at the start of an argument:
 * {@code --name='a b'} is the two arguments {@code --name='a} and {@code b'}; write {@code '--name=a b'}.
 * There is no expansion of variables, globs or backslashes (a backslash is a character like any other);
 * an empty argument ({@code ''}) is dropped, and a quote that is never closed is refused. (This is how
 * commons-text's {@code StringTokenizer} split templates before, except that it took an unclosed quote as
 * closed at the end; a property test holds the two to the same arguments.)
 *
 * <p><b>Placeholders.</b> {@code {name}} or {@code {raw:name}}, where {@code name} is a field path: an
 * identifier ({@code [A-Za-z_][A-Za-z0-9_]*}), then any number of {@code .member} steps, each an identifier
 * or a number ({@code {meta.lang}}, {@code {choices.0.text}}: a number steps into an array by its 0-based
 * index, or into an object by the member of that name). See {@link #valueAt} for how a path is followed.
 * Strings are inserted as they are, numbers, booleans, {@code null}, objects and arrays as their JSON text
 * ({@link #textOf}). {@code {{} and {@code }}} stand for literal braces; write {@code ${{HOME}}} for a
 * shell's {@code ${HOME}}. Other braces ({@code {"a": 1}}, {@code {print $1}}) are literal. Filling happens
 * after splitting, so a value always stays inside the one argument its placeholder was in: a case {@code
 * {"id": "a b; rm -rf ~"}} gives {@code printf %s {id}} exactly two arguments, and nothing reaches a shell
 * unless the template runs one.
 *
 * <p><b>Shell scripts: placeholders are shell-quoted.</b> When the template runs a shell with a script
 * (an argument {@code sh}, {@code bash}, {@code rbash}, {@code dash}, {@code zsh}, {@code ksh}, {@code mksh},
 * {@code ash}, {@code yash} or {@code posh}, by any path, wherever it stands, so {@code /bin/sh -c}, {@code
 * env sh -c}, {@code timeout 9 bash -c}; followed by options of which one cluster holds {@code c}: {@code -c}, {@code
 * -ec}, {@code -o pipefail -c}), the first argument after its options is that shell's script, and a case's
 * data spliced into it would be run as code: with {@code sh -c 'echo {id}'}, the id {@code a; touch /tmp/x}
 * would create the file. So a placeholder <em>inside</em> that script is substituted shell-quoted, in POSIX
 * single quotes ({@code 'a; touch /tmp/x'}, a quote inside as {@code '\''}), as GNU parallel does: the
 * script sees the value as one word of text. Two exceptions keep what templates already mean:
 *
 * <ul>
 *   <li>a placeholder that is the <em>whole</em> script ({@code sh -c {script}}) is inserted as it is: the
 *       case's own script is what is meant to run;
 *   <li>{@code {raw:name}} is inserted as it is, wherever it stands: for whoever quotes it themselves, or
 *       means the value as code.
 * </ul>
 *
 * A quoted value cannot be put where quoting would be broken or undone, so {@link #parse} refuses, naming
 * the column, a placeholder in a shell script that stands inside single or double quotes, {@code $'...'},
 * backquotes, a comment or a here-document, or right after a backslash or a {@code $}; or where the shell
 * evaluates arithmetic, which takes a quoted value as an expression and runs the {@code $(...)} in its
 * subscripts ({@code $((...))}, {@code ((...))}, {@code $[...]}, an array subscript, an offset {@code
 * ${s:N}}, {@code [[ ... ]]}, {@code let}, {@code declare -i}; see {@link ShellScan}); or where the shell
 * takes the value as a variable's name, whose subscript is arithmetic too (a declaration's name part, a value
 * of {@code declare -n/-a/-A}, {@code read}, {@code unset}, {@code mapfile}, {@code getopts}, the word after
 * {@code -v} or {@code -R} of {@code [}, {@code test} and {@code printf}); anywhere after the point where the
 * scan cannot follow the script (a here-document's delimiter that is not a plain word; {@code $'} in a script
 * for a shell that may be dash); a placeholder among a shell's options before its {@code -c}; and a
 * placeholder in the string of {@code env -S}, which env splits again. The ways out are in the message: write the
 * placeholder unquoted (Tally quotes it), pass the value as an argument ({@code sh -c 'echo "$1"' sh {id}}),
 * or use {@code {raw:id}}. Other interpreters' inline code
 * ({@code python3 -c}, {@code perl -e}, {@code node -e}) and commands that hand their arguments to a shell
 * ({@code ssh}, {@code su -c}) are not recognised: pass data to those as arguments.
 *
 * <p>Immutable and thread-safe.
 */
public final class CommandTemplate {
  /** The shells whose {@code -c} script is recognised, by the last part of the argument's path. */
  static final Set<String> SHELLS = Set.of("sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "posh");

  /** The prefix of a placeholder inserted as it is: {@code {raw:name}}. */
  public static final String RAW_PREFIX = "raw:";

  /** What separates arguments (as commons-text's split matcher did). */
  private static final String SEPARATORS = " \t\n\r\f";

  /**
   * Literal text ({@code field == null}) or a placeholder; a placeholder's {@code position} is that of its
   * opening brace in the template, 0-based (for errors). A literal's is not used.
   */
  record Part(String literal, String field, boolean raw, int position) {
    boolean placeholder() {
      return field != null;
    }

    String spelled() {
      return "{" + (raw ? RAW_PREFIX : "") + field + "}";
    }
  }

  /** One argument: its parts in order, and whether it is a shell's script (its placeholders are quoted). */
  private record Arg(List<Part> parts, boolean script) {
    boolean literalOnly() {
      return parts.stream().noneMatch(Part::placeholder);
    }

    String literalText() {
      StringBuilder b = new StringBuilder();
      parts.forEach(p -> b.append(p.literal()));
      return b.toString();
    }
  }

  /** An argument as split, each character with its 0-based position in the template. */
  private record Token(String text, int[] positions) {}

  private final String source;
  private final List<Arg> args;
  private final Set<String> fields;

  private CommandTemplate(String source, List<Arg> args) {
    this.source = source;
    this.args = args;
    Set<String> names = new LinkedHashSet<>();
    for (Arg arg : args) {
      for (Part part : arg.parts()) {
        if (part.placeholder()) {
          names.add(part.field());
        }
      }
    }
    this.fields = Collections.unmodifiableSet(names);
  }

  /**
   * Splits and parses a template.
   *
   * @throws IllegalArgumentException if the template has no argument (the message quotes it), or a quote
   *     that is never closed (the message names its column), or a
   *     placeholder stands in a shell script where it cannot be quoted (the message names its column, 1 for
   *     the template's first character, and the ways out)
   */
  public static CommandTemplate parse(String template) {
    Objects.requireNonNull(template, "template");
    List<Token> tokens = split(template);
    if (tokens.isEmpty()) {
      throw new IllegalArgumentException("exec cmd has no command in it: '" + template + "'");
    }
    List<Arg> args = new ArrayList<>(tokens.size());
    for (Token token : tokens) {
      args.add(new Arg(parseArg(token), false));
    }
    refuseSplitStrings(args);
    for (int script : shellScripts(args)) {
      Arg arg = args.get(script);
      if (arg.parts().size() == 1 && arg.parts().get(0).placeholder()) {
        continue; // the whole script is the case's: inserted as it is
      }
      String shell = describeShell(args, script);
      ShellScan.check(arg.parts(), shell);
      args.set(script, new Arg(arg.parts(), true));
    }
    return new CommandTemplate(template, List.copyOf(args));
  }

  /**
   * Splits as commons-text's {@code StringTokenizer} with its split and quote matchers did (see the class
   * comment), keeping each character's position.
   */
  private static List<Token> split(String s) {
    List<Token> out = new ArrayList<>();
    int pos = 0;
    int len = s.length();
    while (pos < len) {
      if (SEPARATORS.indexOf(s.charAt(pos)) >= 0) {
        pos++;
        continue;
      }
      StringBuilder text = new StringBuilder();
      List<Integer> positions = new ArrayList<>();
      char quote = 0;
      boolean quoting = false;
      int openedAt = -1;
      char first = s.charAt(pos);
      if (first == '\'' || first == '"') {
        quote = first; // only a quote that opens the argument quotes; the same character toggles it after
        quoting = true;
        openedAt = pos;
        pos++;
      }
      while (pos < len) {
        char c = s.charAt(pos);
        if (quoting) {
          if (c == quote) {
            if (pos + 1 < len && s.charAt(pos + 1) == quote) {
              text.append(quote);
              positions.add(pos);
              pos += 2;
            } else {
              quoting = false;
              pos++;
            }
            continue;
          }
        } else {
          if (SEPARATORS.indexOf(c) >= 0) {
            pos++;
            break;
          }
          if (quote != 0 && c == quote) {
            quoting = true;
            openedAt = pos;
            pos++;
            continue;
          }
        }
        text.append(c);
        positions.add(pos);
        pos++;
      }
      if (quoting) { // the end came inside quotes: a typo that would otherwise run as something else
        throw new IllegalArgumentException("exec cmd: the " + (quote == '"' ? "double" : "single") + " quote at column "
            + (openedAt + 1) + " is never closed: '" + s + "'");
      }
      if (text.length() > 0) { // an empty argument is dropped
        out.add(new Token(text.toString(), positions.stream().mapToInt(Integer::intValue).toArray()));
      }
    }
    return out;
  }

  /**
   * The literal text and placeholders of one text, by this grammar's placeholder rules ({@code {name}},
   * {@code {raw:name}}, {@code {{} and {@code }}}) without splitting it into arguments: for templates that
   * are not command lines ({@link PromptTemplate}). A placeholder's position is its brace's index in
   * {@code text}.
   */
  static List<Part> placeholders(String text) {
    int[] positions = new int[text.length()];
    for (int k = 0; k < positions.length; k++) {
      positions[k] = k;
    }
    return parseArg(new Token(text, positions));
  }

  private static List<Part> parseArg(Token token) {
    String s = token.text();
    List<Part> parts = new ArrayList<>();
    StringBuilder literal = new StringBuilder();
    int literalStart = 0;
    int i = 0;
    while (i < s.length()) {
      char c = s.charAt(i);
      if ((c == '{' || c == '}') && i + 1 < s.length() && s.charAt(i + 1) == c) {
        if (literal.length() == 0) {
          literalStart = i;
        }
        literal.append(c);
        i += 2;
        continue;
      }
      if (c == '{') {
        boolean raw = s.startsWith(RAW_PREFIX, i + 1);
        int nameStart = raw ? i + 1 + RAW_PREFIX.length() : i + 1;
        int end = pathEnd(s, nameStart);
        if (end > nameStart && end < s.length() && s.charAt(end) == '}') {
          if (literal.length() > 0) {
            parts.add(new Part(literal.toString(), null, false, token.positions()[literalStart]));
            literal.setLength(0);
          }
          parts.add(new Part(null, s.substring(nameStart, end), raw, token.positions()[i]));
          i = end + 1;
          continue;
        }
      }
      if (literal.length() == 0) {
        literalStart = i;
      }
      literal.append(c);
      i++;
    }
    if (literal.length() > 0 || parts.isEmpty()) {
      parts.add(new Part(literal.toString(), null, false, literal.length() > 0 ? token.positions()[literalStart] : 0));
    }
    return List.copyOf(parts);
  }

  /**
   * Where the field path starting at {@code from} ends: after an identifier and every {@code .step} that
   * follows it (a step is an identifier or digits); {@code from} if no identifier starts there. A dot not
   * followed by a step is not part of the path (so {@code {a.}} is no placeholder: its brace does not follow).
   */
  private static int pathEnd(String s, int from) {
    int end = wordEnd(s, from, false);
    if (end == from) {
      return from;
    }
    while (end < s.length() && s.charAt(end) == '.') {
      int next = wordEnd(s, end + 1, true);
      if (next == end + 1) {
        break;
      }
      end = next;
    }
    return end;
  }

  /** The end of the identifier (or, with {@code digits}, the identifier or run of digits) at {@code from}. */
  private static int wordEnd(String s, int from, boolean digits) {
    int i = from;
    while (i < s.length()) {
      char c = s.charAt(i);
      boolean ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || ((digits || i > from) && c >= '0' && c <= '9');
      if (!ok) {
        break;
      }
      i++;
    }
    return i;
  }

  /**
   * The indexes of the arguments that are a shell's script: for each literal argument naming a shell, the
   * first operand after its options, if one option cluster among them holds {@code c}. {@code -o} and
   * {@code -O} (and {@code +o}, {@code +O}) take the next argument as their value, as bash's {@code
   * --rcfile} and {@code --init-file} do; {@code --} or {@code -} ends the options.
   */
  private static List<Integer> shellScripts(List<Arg> args) {
    List<Integer> scripts = new ArrayList<>();
    for (int i = 0; i < args.size(); i++) {
      Arg arg = args.get(i);
      if (!arg.literalOnly() || !SHELLS.contains(baseName(arg.literalText()))) {
        continue;
      }
      boolean command = false;
      int j = i + 1;
      while (j < args.size() && args.get(j).literalOnly()) {
        String option = args.get(j).literalText();
        if (option.equals("--") || option.equals("-")) {
          j++;
          break;
        }
        if (option.startsWith("--")) {
          j += option.equals("--rcfile") || option.equals("--init-file") ? 2 : 1;
          continue;
        }
        if ((option.startsWith("-") || option.startsWith("+")) && option.length() > 1) {
          String letters = option.substring(1);
          command |= option.startsWith("-") && letters.indexOf('c') >= 0;
          j += 1 + (int) letters.chars().filter(ch -> ch == 'o' || ch == 'O').count();
          continue;
        }
        break; // the first operand
      }
      if (!command && j < args.size() && !args.get(j).literalOnly()) {
        refuseAmongOptions(args, i, j);
      }
      if (command && j < args.size()) {
        scripts.add(j);
      }
    }
    return scripts;
  }

  /**
   * Refuses the placeholder in argument {@code at}, which stands where shell {@code shell}'s options are read,
   * when a later argument is an option cluster holding {@code c}: the value could be an option itself, so
   * which argument is the script cannot be told.
   */
  private static void refuseAmongOptions(List<Arg> args, int shell, int at) {
    for (int k = at + 1; k < args.size(); k++) {
      String option = args.get(k).literalOnly() ? args.get(k).literalText() : "";
      if (option.startsWith("-") && !option.startsWith("--") && option.indexOf('c') > 0) {
        Part p = args.get(at).parts().stream().filter(Part::placeholder).findFirst().orElseThrow();
        throw new IllegalArgumentException("column " + (p.position() + 1) + ": the placeholder " + p.spelled()
            + " stands among the options of " + args.get(shell).literalText() + ", before its " + option
            + ", so a value could be an option and Tally cannot tell which argument is the script. Put it after the"
            + " script, as an argument of it");
      }
    }
  }

  /**
   * Refuses a placeholder in the string of {@code env -S} ({@code --split-string}): env splits that string
   * into arguments again, with quotes and {@code ${VAR}} of its own, so a value there would not stay one
   * argument, and a shell named in it runs a script this class never sees.
   *
   * @throws IllegalArgumentException naming the placeholder's column and the way out
   */
  private static void refuseSplitStrings(List<Arg> args) {
    for (int i = 0; i + 1 < args.size(); i++) {
      if (!args.get(i).literalOnly() || !baseName(args.get(i).literalText()).equals("env")) {
        continue;
      }
      for (int j = i + 1; j < args.size(); j++) {
        Arg arg = args.get(j);
        String start = arg.parts().get(0).placeholder() ? "" : arg.parts().get(0).literal();
        if (start.equals("--") || !start.startsWith("-")) {
          break; // env's options end at its first operand
        }
        Arg string = null;
        if (start.startsWith("--")) {
          if (start.startsWith("--split-string=")) {
            string = arg;
          } else if (arg.literalOnly() && start.equals("--split-string")) {
            string = j + 1 < args.size() ? args.get(j + 1) : null;
          } else if (arg.literalOnly() && ENV_LONG_OPTIONS_WITH_VALUE.contains(start)) {
            j++; // its value
          }
        } else {
          // a cluster of short options: -S takes the rest of the cluster, or else the next argument, as its
          // string; -u and -C take the rest, or the next argument, as their value (-vS, -iu NAME, -C DIR)
          for (int k = 1; k < start.length(); k++) {
            char letter = start.charAt(k);
            boolean rest = k + 1 < start.length() || !arg.literalOnly();
            if (letter == 'S') {
              string = rest ? arg : j + 1 < args.size() ? args.get(j + 1) : null;
              break;
            }
            if (letter == 'u' || letter == 'C') {
              j += rest ? 0 : 1;
              break;
            }
          }
        }
        if (string != null) {
          for (Part p : string.parts()) {
            if (p.placeholder()) {
              throw new IllegalArgumentException("column " + (p.position() + 1) + ": the placeholder " + p.spelled()
                  + " is in the string that env -S splits into arguments again, so its value would not stay one"
                  + " argument (and a shell there would run it). Pass it as an argument after the string instead");
            }
          }
          break;
        }
      }
    }
  }

  /** env's long options that take the next argument as their value. */
  private static final Set<String> ENV_LONG_OPTIONS_WITH_VALUE = Set.of("--unset", "--chdir");

  /** {@code "sh -c"}, {@code "bash -ec"}: the shell and options in front of script {@code index}, for messages. */
  private static String describeShell(List<Arg> args, int index) {
    int shell = index - 1;
    while (shell > 0 && !(args.get(shell).literalOnly() && SHELLS.contains(baseName(args.get(shell).literalText())))) {
      shell--;
    }
    StringBuilder b = new StringBuilder();
    for (int k = shell; k < index; k++) {
      b.append(k > shell ? " " : "").append(args.get(k).literalText());
    }
    return b.toString();
  }

  private static String baseName(String path) {
    return path.substring(path.lastIndexOf('/') + 1);
  }

  /**
   * The fields the template's placeholders name (raw or not), as field paths ({@code meta.lang}), in order of
   * first appearance; escaped braces ({@code ${{HOME}}}) and braces around anything but a field path name
   * none.
   */
  public Set<String> fields() {
    return fields;
  }

  /**
   * The first field the template uses that {@code caseObject} lacks, if any, as its path: what {@link
   * #fill} would refuse the case for. A field whose value is JSON {@code null} is present (it is inserted
   * as {@code null}).
   *
   * @param caseObject the case's JSON object
   */
  public Optional<String> missingField(JsonNode caseObject) {
    return firstMissing(fields, caseObject);
  }

  /** The first of {@code paths} that {@code caseObject} lacks ({@link #valueAt} finds nothing), if any. */
  static Optional<String> firstMissing(Set<String> paths, JsonNode caseObject) {
    for (String path : paths) {
      if (valueAt(caseObject, path) == null) {
        return Optional.of(path);
      }
    }
    return Optional.empty();
  }

  /**
   * The value a placeholder's field path names in a case, or null if there is none, by the one path rule
   * ({@link dev.tally.core.cases.FieldPath#valueAt}). The path is one of {@link #fields()}, as {@link #parse}
   * read it.
   */
  static JsonNode valueAt(JsonNode caseObject, String path) {
    return dev.tally.core.cases.FieldPath.valueAt(caseObject, path);
  }

  /** The most member names {@link #missingReason} lists of an object that lacks the next step. */
  static final int MAX_LISTED_MEMBERS = 5;

  /**
   * What stands in the way of a field path that {@link #valueAt} finds nothing at, for an error message:
   * empty when the case simply lacks its first step; else, in parentheses after a space, what the path
   * reached before it ran out: an object's member names (at most {@value #MAX_LISTED_MEMBERS}), an array's
   * length, or a value of another kind, with a hint when that value is a string of JSON text (a CSV column,
   * read as a string unless {@code --csv-types} says otherwise). For example {@code ("meta" is a string of
   * JSON text, not an object or array: for a CSV column, give --csv-types meta:json)}.
   *
   * @param caseObject the case's JSON object
   * @param path a field path that {@link #valueAt} finds nothing at
   * @return the reason with its leading space, or the empty string
   */
  public static String missingReason(JsonNode caseObject, String path) {
    if (caseObject.get(path) != null) {
      return "";
    }
    JsonNode node = caseObject;
    int start = 0;
    while (true) {
      int dot = path.indexOf('.', start);
      String step = dot < 0 ? path.substring(start) : path.substring(start, dot);
      JsonNode next = dev.tally.core.cases.FieldPath.step(node, step);
      if (next == null) {
        return start == 0 ? "" : " (" + blocked(node, path.substring(0, start - 1), path.substring(start)) + ")";
      }
      if (dot < 0) {
        return ""; // found: not a missing path
      }
      node = next;
      start = dot + 1;
    }
  }

  /** The longest member name {@link #missingReason} lists whole; a longer one is cut, with an ellipsis. */
  static final int MAX_LISTED_NAME_CHARS = 40;

  /**
   * A member name as listed: as a JSON string (quotes, control characters and the other characters that do
   * not show as themselves escaped: {@link dev.tally.core.HiddenCharacters#escaped}), cut if long.
   */
  private static String memberName(String name) {
    String shown = name.codePointCount(0, name.length()) > MAX_LISTED_NAME_CHARS
        ? name.substring(0, name.offsetByCodePoints(0, MAX_LISTED_NAME_CHARS)) + "\u2026" : name; // never half a pair
    return dev.tally.core.HiddenCharacters.escaped(new com.fasterxml.jackson.databind.node.TextNode(shown).toString());
  }

  /**
   * What {@code reached}, the value at {@code walked}, is, when it lacks the path's next step ({@code rest}
   * is the path from that step on).
   */
  private static String blocked(JsonNode reached, String walked, String rest) {
    String name = "\"" + walked + "\"";
    if (reached.isObject()) {
      List<String> names = new ArrayList<>();
      reached.fieldNames().forEachRemaining(names::add);
      if (names.isEmpty()) {
        return name + " is an empty object";
      }
      String listed = names.stream().limit(MAX_LISTED_MEMBERS).map(CommandTemplate::memberName).collect(Collectors.joining(", "));
      String dotted = names.stream().filter(n -> n.indexOf('.') >= 0 && (rest.equals(n) || rest.startsWith(n + ".")))
          .findFirst().map(n -> ", but a path steps at every dot: a member whose name holds one (" + memberName(n)
              + ") is found only at the top level").orElse("");
      return name + " has " + listed + (names.size() > MAX_LISTED_MEMBERS ? " and " + (names.size() - MAX_LISTED_MEMBERS) + " more" : "")
          + dotted;
    }
    if (reached.isArray()) {
      String step = rest.indexOf('.') < 0 ? rest : rest.substring(0, rest.indexOf('.'));
      boolean padded = step.length() > 1 && step.charAt(0) == '0' && step.chars().allMatch(c -> c >= '0' && c <= '9');
      return name + " is an array of " + reached.size() + (reached.size() == 1 ? " element" : " elements")
          + ", indexed from 0" + (padded ? " with no leading zeros" : "");
    }
    if (reached.isTextual()) {
      String text = reached.textValue().strip();
      if (text.startsWith("{") || text.startsWith("[")) {
        return name + " is a string of JSON text, not an object or array"
            + (walked.indexOf('.') < 0 ? ": for a CSV column, give --csv-types " + walked + ":json" : "");
      }
      return name + " is a string, not an object or array";
    }
    return name + " is " + (reached.isNull() ? "null" : reached.isBoolean() ? "a boolean" : reached.isNumber() ? "a number"
        : reached.getNodeType().toString().toLowerCase(java.util.Locale.ROOT)) + ", not an object or array";
  }

  /** A placeholder's value as inserted: a string as it is, anything else as its JSON text. */
  static String textOf(JsonNode value) {
    return value.isTextual() ? value.textValue() : value.toString();
  }

  /**
   * Fills the placeholders from a case: as they are, except inside a shell's script, where they are
   * shell-quoted ({@link #shellQuote}) unless raw.
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
        if (!part.placeholder()) {
          sb.append(part.literal());
          continue;
        }
        String text = textOf(valueAt(caseObject, part.field()));
        sb.append(arg.script() && !part.raw() ? shellQuote(text) : text);
      }
      out.add(sb.toString());
    }
    return out;
  }

  /**
   * {@code value} as one word of a POSIX shell, in single quotes: {@code 'it'\''s'} for {@code it's},
   * {@code ''} for the empty string. Inside single quotes a shell interprets nothing, so no value can end
   * the word or run as code.
   *
   * @param value any text
   * @return it as one single-quoted shell word
   */
  public static String shellQuote(String value) {
    return "'" + value.replace("'", "'\\''") + "'";
  }

  @Override
  public String toString() {
    return source;
  }

  /**
   * Where each placeholder of a shell script stands, as a POSIX shell (or bash, ksh, zsh) would read the
   * script: a scanner of quotes, substitutions, comments, here-documents and arithmetic (not a parser: it
   * tracks only what decides whether a single-quoted word placed there is one word of text). A placeholder
   * is fine at the top level of the script, in a {@code $(...)} command substitution, or in the word of an
   * unquoted {@code ${name:-word}} expansion; anywhere else it is refused. Arithmetic is refused wherever
   * the shell evaluates it ({@code $((...))}, {@code ((...))}, {@code $[...]}, an array subscript, an
   * offset {@code ${name:N}}, {@code [[ ... ]]}'s numeric tests, {@code let}, {@code declare -i}): there a
   * quoted value is taken as an expression, and an expression's subscript runs the {@code $(...)} in it. When
   * in doubt it refuses: a template can always pass the value as an argument.
   */
  private static final class ShellScan {
    /** Why arithmetic refuses a placeholder, after where it is. */
    private static final String ARITHMETIC_WHY = " (the shell evaluates that as arithmetic, which runs a $(...) in the value)";

    private enum Context {
      CODE("", true), COMMAND_SUBSTITUTION("", true), PARAMETER("", true),
      SINGLE_QUOTES("inside single quotes", false), DOUBLE_QUOTES("inside double quotes", false),
      ANSI_QUOTES("inside $'...'", false), BACKQUOTES("inside `...` (write $(...) instead)", false),
      ARITHMETIC("inside $((...))", false),
      ARITHMETIC_COMMAND("inside ((...))" + ARITHMETIC_WHY, false),
      ARITHMETIC_BRACKETS("inside $[...]" + ARITHMETIC_WHY, false),
      SUBSCRIPT("inside an array subscript [...]" + ARITHMETIC_WHY, false),
      CONDITIONAL("inside [[ ... ]] (its -eq, -lt and other numeric tests evaluate their operands as arithmetic,"
          + " which runs a $(...) in the value; [ ... ] does not)", false),
      LET("in an argument of let" + ARITHMETIC_WHY, false),
      TEST("in a test command, whose numeric comparisons (-eq, -lt...) this shell evaluates as arithmetic, which runs a"
          + " $(...) in the value (bash's and dash's do not)", false),
      INTEGER_DECLARATION("in a declaration of numeric variables (declare -i, integer, float)" + ARITHMETIC_WHY, false),
      /** declare, typeset, local, export, readonly: a name (before {@code =}) is refused, a value is quotable. */
      DECLARATION("", true),
      /** read, unset, mapfile, readarray, getopts: every argument may be a variable's name. */
      NAMES("in an argument of a command that takes variable names (read, unset, mapfile, readarray, getopts),"
          + " whose subscripts the shell evaluates as arithmetic, which runs a $(...) in the value", false),
      /** {@code name=( ... )}: an array's elements, each possibly {@code [subscript]=value}. */
      ARRAY_LITERAL("", true);

      final String where;
      final boolean quotable;

      Context(String where, boolean quotable) {
        this.where = where;
        this.quotable = quotable;
      }
    }

    /** One level of nesting, with its parenthesis (or bracket) depth, for substitutions and arithmetic. */
    private static final class Frame {
      final Context context;
      int parens;
      /**
       * In a {@code ${...}}: 0 in its name (a subscript, a prefix), 1 in its word, 2 in its offset. In a
       * {@link Context#DECLARATION}: 0 in an argument's name, 1 in its value (after its {@code =}).
       */
      int parameterPart;
      /** In a {@code ${...}}: the characters seen since its opening. */
      int seen;
      /** In a {@link Context#DECLARATION}: whether its options make every value a name or an array (-n, -a, -A). */
      boolean valuesUnsafe;

      Frame(Context context) {
        this.context = context;
      }

      /** Why a placeholder cannot be quoted in this frame, or null if it can. */
      String unquotable() {
        if (context == Context.DECLARATION) {
          if (valuesUnsafe) {
            return "in a declaration with -n, -a or -A, whose values are variable names or arrays (their subscripts are"
                + " arithmetic, which runs a $(...) in the value)";
          }
          return parameterPart == 0 ? "in the name of a declared variable (before its =; a subscript there is"
              + " arithmetic, which runs a $(...) in the value)" : null;
        }
        if (context == Context.PARAMETER) {
          return switch (parameterPart) {
            case 1 -> null;
            case 2 -> "in the offset of ${name:offset}" + ARITHMETIC_WHY;
            default -> "inside ${...} before its operator (a name there, or a subscript, is arithmetic or code)";
          };
        }
        return context.quotable ? null : context.where;
      }

      boolean code() {
        return context == Context.CODE || context == Context.COMMAND_SUBSTITUTION;
      }

      /** Whether this is one command's arguments (let, a declaration, a test...), which a ; or newline ends. */
      boolean commandArguments() {
        return context == Context.LET || context == Context.INTEGER_DECLARATION || context == Context.TEST
            || context == Context.DECLARATION || context == Context.NAMES;
      }
    }

    /** The commands whose options may declare integer variables ({@code -i}), whose values are arithmetic. */
    private static final Set<String> DECLARATIONS = Set.of("declare", "typeset", "local", "export", "readonly");
    /** Commands that declare numeric variables whatever their options (ksh, zsh). */
    private static final Set<String> NUMERIC_DECLARATIONS = Set.of("integer", "float");
    /** Commands whose arguments are (or may be) variable names, evaluated with their subscripts. */
    private static final Set<String> NAME_COMMANDS = Set.of("read", "unset", "mapfile", "readarray", "getopts");
    /**
     * Options after which the next word is a variable's name: {@code -v} ({@code [ -v name ]}, {@code test -v},
     * {@code printf -v}) and {@code -R} ({@code [ -R name ]}, a name reference).
     */
    private static final Set<String> NAME_OPTIONS = Set.of("-v", "-R");
    /** The commands whose {@link #NAME_OPTIONS} take a name: {@code [}, {@code test}, {@code printf}. */
    private static final Set<String> NAME_OPTION_COMMANDS = Set.of("[", "test", "printf");
    /** Words in front of a simple command's name: reserved words, and builtins that run the next word. */
    private static final Set<String> COMMAND_PREFIXES = Set.of("if", "then", "elif", "else", "do", "while", "until",
        "!", "{", "time", "builtin", "command", "exec", "nohup");
    /** The shells that may be dash, where {@code $'} is a {@code $} then a single quote, not bash's {@code $'...'}. */
    private static final Set<String> POSIX_SHELLS = Set.of("sh", "dash", "ash", "posh");
    /**
     * The shells whose {@code test} (and {@code [}) evaluates the operands of {@code -eq}, {@code -lt} and the
     * rest as arithmetic: the Korn shells and zsh; bash's and dash's take them as integers only.
     */
    private static final Set<String> ARITHMETIC_TEST_SHELLS = Set.of("ksh", "ksh93", "mksh", "zsh");

    private record Heredoc(String delimiter, boolean stripTabs) {}

    private final List<Part> items; // one Part per character (literal of length 1) or placeholder
    private final String shell;
    /** Whether this shell's {@code test} evaluates arithmetic ({@link #ARITHMETIC_TEST_SHELLS}). */
    private final boolean arithmeticTest;
    private final ArrayList<Frame> stack = new ArrayList<>();
    private final List<Heredoc> pending = new ArrayList<>();
    private int i;
    private boolean wordStart = true;
    /** Why the scan cannot follow the script past here, once it cannot (every later placeholder is refused). */
    private String lost;

    private ShellScan(List<Part> parts, String shell) {
      List<Part> flat = new ArrayList<>();
      for (Part p : parts) {
        if (p.placeholder()) {
          flat.add(p);
        } else {
          for (int k = 0; k < p.literal().length(); k++) {
            flat.add(new Part(String.valueOf(p.literal().charAt(k)), null, false, -1)); // only placeholders are named
          }
        }
      }
      this.items = flat;
      this.shell = shell;
      String base = baseName(shell.split(" ", 2)[0]);
      this.arithmeticTest = ARITHMETIC_TEST_SHELLS.contains(base);
      stack.add(new Frame(Context.CODE));
      if (POSIX_SHELLS.contains(base)) {
        for (int k = 0; k + 1 < flat.size(); k++) {
          if (at(k) == '$' && at(k + 1) == '\'') {
            lost = "in a script that holds $' (bash reads $'...' as one quoted string, dash as a $ then a quote, and "
                + base + " may be either)";
            break;
          }
        }
      }
    }

    /** @throws IllegalArgumentException naming the column of the first placeholder that cannot be quoted */
    static void check(List<Part> parts, String shell) {
      new ShellScan(parts, shell).scan();
    }

    private char at(int k) {
      return k >= 0 && k < items.size() && !items.get(k).placeholder() ? items.get(k).literal().charAt(0) : 0;
    }

    private boolean placeholderAt(int k) {
      return k < items.size() && items.get(k).placeholder();
    }

    private Frame top() {
      return stack.get(stack.size() - 1);
    }

    private void scan() {
      while (i < items.size()) {
        if (placeholderAt(i)) {
          placeholder(items.get(i), null);
          i++;
          wordStart = false;
          continue;
        }
        char c = at(i);
        switch (top().context) {
          case SINGLE_QUOTES -> {
            if (c == '\'') {
              pop();
            }
            i++;
          }
          case ANSI_QUOTES -> {
            if (c == '\\') {
              escaped();
            } else {
              if (c == '\'') {
                pop();
              }
              i++;
            }
          }
          case DOUBLE_QUOTES -> {
            if (c == '\\') {
              escaped();
            } else if (c == '"') {
              pop();
              i++;
            } else if (substitution(c)) {
              wordStart = top().context == Context.COMMAND_SUBSTITUTION;
            } else {
              i++;
            }
          }
          case BACKQUOTES -> {
            // POSIX: the next backquote not preceded by a backslash ends it, whatever quotes stand between.
            if (c == '\\') {
              escaped();
            } else {
              if (c == '`') {
                pop();
              }
              i++;
            }
          }
          default -> code(c);
        }
      }
    }

    /** One character in code (the top level, a command substitution, an expansion or arithmetic). */
    private void code(char c) {
      Frame f = top();
      if (f.commandArguments() && (";&|\n".indexOf(c) >= 0 || c == ')' && f.parens == 0)) {
        pop(); // the command ends: the character is the enclosing context's
        return;
      }
      if (c == '#' && wordStart && (f.code() || f.context == Context.ARRAY_LITERAL)) {
        comment();
        return;
      }
      if (f.code() && c == '(' && at(i + 1) == '(') {
        // an arithmetic command wherever bash reads one: at a word's start, and right after a reserved word
        // too (for((...)), if((...)), while((...)))
        push(Context.ARITHMETIC_COMMAND);
        i += 2;
        wordStart = false;
        return;
      }
      if (c == '(' && at(i - 1) == '=' && (f.code() || f.context == Context.DECLARATION)) {
        push(Context.ARRAY_LITERAL); // name=( ... ): its elements, each possibly [subscript]=value
        i++;
        wordStart = true;
        return;
      }
      if (c == ')' && f.context == Context.ARRAY_LITERAL && f.parens == 0) {
        close(1);
        return;
      }
      if (f.context == Context.DECLARATION) {
        if (wordStart) {
          f.parameterPart = 0; // a new argument starts with its name
        }
        if (c == '=' && f.parameterPart == 0) {
          f.parameterPart = 1;
        }
      }
      if (wordStart && f.code() && arithmeticCommand(c)) {
        return;
      }
      if (f.context == Context.PARAMETER && f.parameterPart == 0 && parameterOperator(f, c)) {
        return;
      }
      if (f.context == Context.PARAMETER) {
        f.seen++;
      }
      if (c == ']' && (f.context == Context.SUBSCRIPT || f.context == Context.ARITHMETIC_BRACKETS)) {
        if (f.parens == 0) {
          close(1);
          return;
        }
        f.parens--;
      } else if (c == '[' && (f.context == Context.SUBSCRIPT || f.context == Context.ARITHMETIC_BRACKETS)) {
        f.parens++;
      } else if (c == ']' && at(i + 1) == ']' && f.context == Context.CONDITIONAL) {
        close(2);
        return;
      } else if (c == '[' && f.context != Context.ARITHMETIC && f.context != Context.ARITHMETIC_COMMAND
          && (!wordStart && identifierChar(at(i - 1)) || at(i - 1) == '(' && !blank(at(i + 1))
              || wordStart && f.context == Context.ARRAY_LITERAL)) {
        // name[...] (an array's element, or a glob's bracket), or ([...]=value); not $([ ... ]), a test
        push(Context.SUBSCRIPT);
        i++;
        wordStart = false;
        return;
      }
      if (c == '\\') {
        if (placeholderAt(i + 1)) {
          placeholder(items.get(i + 1), "right after a backslash");
        }
        i += 2;
        wordStart = false;
        return;
      }
      if (c == '$' && placeholderAt(i + 1)) {
        placeholder(items.get(i + 1), "right after a $ (write ${{name}} for a shell variable)");
      }
      if (quote(c) || substitution(c)) {
        wordStart = top().context == Context.COMMAND_SUBSTITUTION; // $( starts a command: a # there is a comment
        return;
      }
      if (c == '}' && f.context == Context.PARAMETER) {
        close(1);
        return;
      }
      boolean arithmetic = f.context == Context.ARITHMETIC || f.context == Context.ARITHMETIC_COMMAND;
      if (c == '(' && (f.context == Context.COMMAND_SUBSTITUTION || f.context == Context.ARRAY_LITERAL
          || f.commandArguments() || arithmetic)) {
        f.parens++;
      } else if (c == ')' && arithmetic) {
        if (f.parens == 0 && at(i + 1) == ')') {
          close(2);
          return;
        }
        f.parens = Math.max(0, f.parens - 1);
      } else if (c == ')' && (f.context == Context.ARRAY_LITERAL || f.commandArguments())) {
        f.parens--; // one opened here (a closing one at depth 0 ended the context above)
      } else if (c == ')' && f.context == Context.COMMAND_SUBSTITUTION) {
        if (f.parens == 0) {
          close(1);
          return;
        }
        f.parens--;
      } else if (c == '<' && at(i + 1) == '<' && (f.code() || f.commandArguments())) {
        if (at(i + 2) == '<') {
          i += 3; // a here-string: its word is an ordinary word
          wordStart = true;
          return;
        }
        heredocOperator();
        return;
      } else if (c == '\n' && !pending.isEmpty()) {
        i++;
        heredocBodies();
        wordStart = true;
        return;
      }
      wordStart = c == ' ' || c == '\t' || c == '\n' || ";&|()<>".indexOf(c) >= 0;
      i++;
    }

    /**
     * At the start of a word in code: {@code ((} (an arithmetic command, {@code for ((} too), {@code [[} (a
     * conditional), or a command word {@code let}, or {@code declare -i} and its kin, each opening the
     * context it starts; returns whether one did.
     */
    private boolean arithmeticCommand(char c) {
      if (c == '(' && at(i + 1) == '(') {
        push(Context.ARITHMETIC_COMMAND);
        i += 2;
        wordStart = false;
        return true;
      }
      if (c == '[' && at(i + 1) == '[' && (blank(at(i + 2)) || placeholderAt(i + 2))) {
        push(Context.CONDITIONAL);
        i += 2;
        wordStart = true;
        return true;
      }
      int end = commandWordEnd(i);
      String word = dequoted(i, end);
      boolean ends = blank(at(end)) || placeholderAt(end);
      Context opened = null;
      boolean valuesUnsafe = false;
      if (word.equals("let") && ends) {
        opened = Context.LET;
      } else if (NUMERIC_DECLARATIONS.contains(word) && ends) {
        opened = Context.INTEGER_DECLARATION;
      } else if (arithmeticTest && (word.equals("[") || word.equals("test")) && ends) {
        opened = Context.TEST;
      } else if (NAME_COMMANDS.contains(word) && ends) {
        opened = Context.NAMES;
      } else if (DECLARATIONS.contains(word) && ends) {
        opened = Context.DECLARATION;
        int k = end;
        while (blank(at(k))) {
          k++;
        }
        for (String option; !(option = wordAt(k)).isEmpty() && (option.startsWith("-") || option.startsWith("+")); ) {
          if (option.startsWith("-") && option.indexOf('i') > 0) {
            opened = Context.INTEGER_DECLARATION;
          }
          valuesUnsafe |= option.startsWith("-") && (option.indexOf('n') > 0 || option.indexOf('a') > 0 || option.indexOf('A') > 0);
          k += option.length();
          while (blank(at(k))) {
            k++;
          }
        }
      }
      if (opened == null) {
        return false;
      }
      push(opened);
      top().valuesUnsafe = valuesUnsafe;
      i = end;
      wordStart = true;
      return true;
    }

    /**
     * The end of the command word at {@code k}, read as the shell reads it: quotes and backslashes join its
     * pieces ({@code \let}, {@code 'let'}, {@code l"e"t} are all {@code let}); it ends at a blank, an operator,
     * a placeholder, a {@code $} or a backquote.
     */
    private int commandWordEnd(int k) {
      while (k < items.size() && !placeholderAt(k)) {
        char c = at(k);
        if (c == '\\') {
          k += placeholderAt(k + 1) ? 1 : 2;
          continue;
        }
        if (c == '\'' || c == '"') {
          int close = k + 1;
          while (close < items.size() && !placeholderAt(close) && at(close) != c && at(close) != '$' && at(close) != '`') {
            close++;
          }
          if (at(close) != c) {
            return k; // a placeholder or an expansion inside: not a plain word
          }
          k = close + 1;
          continue;
        }
        if (blank(c) || ";&|()<>$`".indexOf(c) >= 0) {
          break;
        }
        k++;
      }
      return k;
    }

    /** The command word from {@code from} to {@code end} ({@link #commandWordEnd}) with its quotes and backslashes removed. */
    private String dequoted(int from, int end) {
      StringBuilder b = new StringBuilder();
      for (int k = from; k < end; k++) {
        char c = at(k);
        if (c == '\\') {
          k++;
          b.append(at(k));
        } else if (c != '\'' && c != '"') {
          b.append(c);
        }
      }
      return b.toString();
    }

    /**
     * In the name part of a {@code ${...}}: a prefix ({@code #}, {@code !}) right after the brace, or the
     * operator that starts its word ({@code :-}, {@code -}, {@code :=}, {@code +}, {@code ?}, {@code #},
     * {@code %}, {@code /}, {@code ^}, {@code ,}) or its offset ({@code :} then anything else); returns
     * whether {@code c} was one (and took it).
     */
    private boolean parameterOperator(Frame f, char c) {
      if (f.seen == 0 && (c == '#' || c == '!')) {
        f.seen++;
        i++;
        return true;
      }
      if (c == ':') {
        f.parameterPart = "-=+?".indexOf(at(i + 1)) >= 0 ? 1 : 2;
        f.seen++;
        i += f.parameterPart == 1 ? 2 : 1;
        return true;
      }
      if (f.seen > 0 && "-=+?#%/^,@".indexOf(c) >= 0) {
        f.parameterPart = 1;
        f.seen++;
        i++;
        return true;
      }
      return false;
    }

    /** The literal word at {@code k}: its characters up to a blank, an operator, a quote or a placeholder. */
    private String wordAt(int k) {
      StringBuilder b = new StringBuilder();
      for (char c; (c = at(k)) != 0 && !blank(c) && ";&|()<>'\"`$\\".indexOf(c) < 0; k++) {
        b.append(c);
      }
      return b.toString();
    }

    private static boolean blank(char c) {
      return c == ' ' || c == '\t' || c == '\n';
    }

    private static boolean identifierChar(char c) {
      return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }

    /** Opens a quote at {@code i} if there is one; returns whether it did. */
    private boolean quote(char c) {
      if (c == '\'') {
        push(Context.SINGLE_QUOTES);
        i++;
        return true;
      }
      if (c == '"') {
        push(Context.DOUBLE_QUOTES);
        i++;
        return true;
      }
      return false;
    }

    /** Opens a {@code $(}, {@code $((}, {@code ${}, {@code $'}, {@code $"} or backquote at {@code i}; returns whether it did. */
    private boolean substitution(char c) {
      if (c == '`') {
        push(Context.BACKQUOTES);
        i++;
        return true;
      }
      if (c != '$') {
        return false;
      }
      char next = at(i + 1);
      boolean inCode = top().context.quotable;
      if (next == '(' && at(i + 2) == '(') {
        push(Context.ARITHMETIC);
        i += 3;
      } else if (next == '(') {
        push(Context.COMMAND_SUBSTITUTION);
        i += 2;
      } else if (next == '{') {
        push(Context.PARAMETER);
        i += 2;
      } else if (next == '[') {
        push(Context.ARITHMETIC_BRACKETS);
        i += 2;
      } else if (next == '\'' && inCode) {
        push(Context.ANSI_QUOTES);
        i += 2;
      } else if (next == '"' && inCode) {
        push(Context.DOUBLE_QUOTES); // $"...": a translated string, quoted like "..."
        i += 2;
      } else {
        return false;
      }
      return true;
    }

    /** A backslash inside quotes: it escapes the next item, which must not be a placeholder. */
    private void escaped() {
      if (placeholderAt(i + 1)) {
        placeholder(items.get(i + 1), "right after a backslash");
      }
      i += 2;
    }

    private void comment() {
      while (i < items.size() && at(i) != '\n') {
        if (placeholderAt(i)) {
          placeholder(items.get(i), "in a comment (a line break in the value would end it)");
        }
        i++;
      }
    }

    /** {@code <<} or {@code <<-} at {@code i}, then its delimiter word: the body begins at the next line. */
    private void heredocOperator() {
      i += 2;
      boolean strip = at(i) == '-';
      if (strip) {
        i++;
      }
      while (at(i) == ' ' || at(i) == '\t') {
        i++;
      }
      StringBuilder delimiter = new StringBuilder();
      char quote = 0;
      while (i < items.size()) {
        if (placeholderAt(i)) {
          placeholder(items.get(i), "in a here-document's delimiter");
        }
        char c = at(i);
        if (quote != 0) {
          if (c == quote) {
            quote = 0;
          } else {
            delimiter.append(c);
          }
        } else if (c == '\'' || c == '"') {
          quote = c;
        } else if (c == '\\') {
          i++;
          if (i < items.size() && !placeholderAt(i)) {
            delimiter.append(at(i));
          }
        } else if (c == ' ' || c == '\t' || c == '\n' || ";&|()<>".indexOf(c) >= 0) {
          break;
        } else {
          delimiter.append(c);
        }
        i++;
      }
      pending.add(new Heredoc(delimiter.toString(), strip));
      String word = delimiter.toString();
      if (word.isEmpty() || word.indexOf('$') >= 0 || word.indexOf('`') >= 0 || at(i) == '(') {
        // bash takes such a delimiter word as written ($(x), `x`), which this scan does not follow
        lost = "after a here-document whose delimiter (" + (word.isEmpty() ? "empty" : word) + "...) Tally cannot read";
      }
      wordStart = false;
    }

    /** After the line holding {@code <<} operators: their bodies, one after another, up to each delimiter line. */
    private void heredocBodies() {
      for (Heredoc h : pending) {
        while (i < items.size()) {
          StringBuilder line = new StringBuilder();
          while (i < items.size() && at(i) != '\n') {
            if (placeholderAt(i)) {
              placeholder(items.get(i), "in a here-document (a value holding its delimiter line would end it)");
            }
            line.append(at(i));
            i++;
          }
          i++; // the line break
          String text = h.stripTabs() ? line.toString().replaceFirst("^\t+", "") : line.toString();
          if (text.equals(h.delimiter())) {
            break;
          }
        }
      }
      pending.clear();
    }

    private void push(Context context) {
      stack.add(new Frame(context));
    }

    /** Whether the word before the scan's position (after blanks) is {@code -v} or {@code -R} ({@link #NAME_OPTIONS}). */
    private boolean previousWordIsNameOption() {
      int k = i - 1;
      if (!blank(at(k))) {
        return false;
      }
      while (k >= 0 && blank(at(k))) {
        k--;
      }
      int end = k + 1;
      while (k >= 0 && at(k) != 0 && !blank(at(k)) && ";&|()<>".indexOf(at(k)) < 0) {
        k--;
      }
      StringBuilder word = new StringBuilder();
      for (int m = k + 1; m < end; m++) {
        word.append(at(m));
      }
      return NAME_OPTIONS.contains(word.toString()) && NAME_OPTION_COMMANDS.contains(commandNameBefore(k));
    }

    /**
     * The name of the simple command that position {@code k} is in: its first word after the last {@code ;},
     * {@code &}, {@code |}, parenthesis or line break, past reserved words ({@code if}, {@code !}...),
     * {@code builtin} and {@code command}, and assignments. Approximate (quotes are not followed), which errs
     * towards refusing.
     */
    private String commandNameBefore(int k) {
      int start = k;
      while (start >= 0 && (at(start) == 0 || ";&|()\n".indexOf(at(start)) < 0)) {
        start--;
      }
      StringBuilder text = new StringBuilder();
      for (int m = start + 1; m <= k; m++) {
        text.append(at(m) == 0 ? ' ' : at(m));
      }
      for (String word : text.toString().trim().split("[ \t]+")) {
        String bare = word.replace("\\", "").replace("'", "").replace("\"", "");
        if (!COMMAND_PREFIXES.contains(bare) && !(bare.indexOf('=') > 0 && identifierChar(bare.charAt(0)))) {
          return bare;
        }
      }
      return "";
    }

    /** Ends the context on top, whose closing is {@code width} characters at the scan's position. */
    private void close(int width) {
      pop();
      i += width;
      wordStart = false;
    }

    private void pop() {
      if (stack.size() > 1) {
        stack.remove(stack.size() - 1);
      }
    }

    /**
     * A placeholder at the scan's position (or {@code why} it cannot be quoted where it stands): fine if
     * raw, or if every enclosing context takes a quoted word; else refused.
     */
    private void placeholder(Part p, String why) {
      if (p.raw()) {
        return;
      }
      String where = why != null ? why : lost;
      if (where == null && previousWordIsNameOption()) {
        where = "right after -v or -R, which take a variable's name (its subscript is arithmetic, which runs a $(...)"
            + " in the value)";
      }
      if (where == null) {
        for (int k = stack.size() - 1; k >= 0 && where == null; k--) {
          where = stack.get(k).unquotable();
        }
      }
      if (where == null) {
        return;
      }
      throw new IllegalArgumentException("column " + (p.position() + 1) + ": the placeholder " + p.spelled() + " is "
          + where + " in the script that " + shell + " runs. Tally shell-quotes a placeholder in a shell script, so"
          + " that a case's data cannot run as code, and it cannot do that there. Write it unquoted (" + shell
          + " 'echo {" + p.field() + "}'), pass it as an argument (" + shell + " 'echo \"$1\"' sh {" + p.field()
          + "}), or write {" + RAW_PREFIX + p.field() + "} if you quote it yourself");
    }
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
