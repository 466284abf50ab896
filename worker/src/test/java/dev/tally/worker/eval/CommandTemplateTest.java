package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class CommandTemplateTest {
  private static JsonNode json(String s) {
    return CaseJson.parseObject(s);
  }

  @Test
  void splitsOnWhitespaceAndKeepsQuotedStretchesWhole() throws Exception {
    CommandTemplate t = CommandTemplate.parse("python3  -m   'my tests' \"a 'b' c\" 'it''s'");
    assertThat(t.fill(json("{}"))).containsExactly("python3", "-m", "my tests", "a 'b' c", "it's");
  }

  /** Pins a documented difference from a shell: a quote opens only at the start of an argument. */
  @Test
  void aQuoteInsideAnArgumentIsAnOrdinaryCharacter() throws Exception {
    CommandTemplate t = CommandTemplate.parse("run --name='a b'");
    assertThat(t.fill(json("{}"))).containsExactly("run", "--name='a", "b'");
  }

  @Test
  void fillsPlaceholdersInsideTheirOwnArgumentOnly() throws Exception {
    CommandTemplate t = CommandTemplate.parse("run --id={id} {q}");
    assertThat(t.fill(json("{\"id\": \"a b\", \"q\": \"1 2 3\"}"))).containsExactly("run", "--id=a b", "1 2 3");
  }

  @Test
  void doubledBracesAreLiteralAndNonIdentifierBracesAreLeftAlone() throws Exception {
    CommandTemplate t = CommandTemplate.parse("sh -c 'echo ${{HOME}} {\"a\":1} {print $1}' {x}");
    assertThat(t.fill(json("{\"x\": \"v\"}"))).containsExactly("sh", "-c", "echo ${HOME} {\"a\":1} {print $1}", "v");
  }

  @Test
  void aFieldPathStepsIntoObjectsAndArraysAndIsShellQuotedInAScriptLikeAnyField() throws Exception {
    CommandTemplate t = CommandTemplate.parse("check --lang={meta.lang} {choices.1.text} {meta.tags} {raw:meta.n} sh -c 'echo {meta.lang}'");
    JsonNode c = json("{\"meta\": {\"lang\": \"fr; rm x\", \"tags\": [\"a\", 2], \"n\": 7},"
        + " \"choices\": [{\"text\": \"no\"}, {\"text\": \"yes please\"}]}");
    assertThat(t.fields()).containsExactly("meta.lang", "choices.1.text", "meta.tags", "meta.n");
    assertThat(t.fill(c)).containsExactly("check", "--lang=fr; rm x", "yes please", "[\"a\",2]", "7", "sh", "-c", "echo 'fr; rm x'");
    // a member named by the whole path is that value (a flat "a.b" from a CSV header, say), before the path's steps
    assertThat(CommandTemplate.parse("x {a.b}").fill(json("{\"a.b\": \"flat\", \"a\": {\"b\": \"nested\"}}")))
        .containsExactly("x", "flat");
    assertThat(CommandTemplate.parse("x {a.b}").missingField(json("{\"a.b\": 1}"))).isEmpty();
    // a number steps into an object by the member of that name
    assertThat(CommandTemplate.parse("x {rows.0}").fill(json("{\"rows\": {\"0\": \"zero\"}}"))).containsExactly("x", "zero");
  }

  @Test
  void aFieldPathThatFindsNothingIsMissingByItsWholePath() {
    CommandTemplate t = CommandTemplate.parse("x {meta.lang}");
    assertThat(t.missingField(json("{\"meta\": {\"lang\": null}}"))).isEmpty(); // null is a value
    assertThat(t.missingField(json("{}"))).contains("meta.lang");
    assertThat(t.missingField(json("{\"meta\": \"fr\"}"))).contains("meta.lang"); // a step into a string
    assertThat(t.missingField(json("{\"meta\": null}"))).contains("meta.lang");
    assertThat(t.missingField(json("{\"meta\": {\"language\": \"fr\"}}"))).contains("meta.lang");
    CommandTemplate indexed = CommandTemplate.parse("x {a.2}");
    assertThat(indexed.missingField(json("{\"a\": [0, 1]}"))).contains("a.2"); // past the end
    assertThat(indexed.missingField(json("{\"a\": [0, 1, 2]}"))).isEmpty();
    assertThat(CommandTemplate.parse("x {a.x}").missingField(json("{\"a\": [0]}"))).contains("a.x"); // a name into an array
    assertThat(CommandTemplate.parse("x {a.9999999999}").missingField(json("{\"a\": [0]}"))).contains("a.9999999999");
    assertThatThrownBy(() -> t.fill(json("{\"meta\": 3}")))
        .isInstanceOf(CommandTemplate.MissingFieldException.class)
        .hasMessage("case has no field 'meta.lang' (the cmd uses {meta.lang})");
  }

  @Test
  void aMissingPathSaysWhatStoodInItsWay() {
    // the first step absent: the field is simply not there, nothing to add
    assertThat(CommandTemplate.missingReason(json("{\"a\": 1}"), "meta.lang")).isEmpty();
    assertThat(CommandTemplate.missingReason(json("{\"meta\": {\"language\": \"fr\", \"src\": 1}}"), "meta.lang"))
        .isEqualTo(" (\"meta\" has \"language\", \"src\")");
    assertThat(CommandTemplate.missingReason(json("{\"m\": {\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7}}"), "m.x"))
        .isEqualTo(" (\"m\" has \"a\", \"b\", \"c\", \"d\", \"e\" and 2 more)");
    assertThat(CommandTemplate.missingReason(json("{\"m\": {}}"), "m.x")).isEqualTo(" (\"m\" is an empty object)");
    assertThat(CommandTemplate.missingReason(json("{\"meta\": {\"x.y\": 1}}"), "meta.x.y"))
        .isEqualTo(" (\"meta\" has \"x.y\", but a path steps at every dot: a member whose name holds one (\"x.y\") is found only at"
            + " the top level)");
    // names come from the case: escaped as JSON strings, and cut when long
    String longName = "n".repeat(CommandTemplate.MAX_LISTED_NAME_CHARS + 10);
    assertThat(CommandTemplate.missingReason(json("{\"m\": {\"a\\\"b\\n\": 1, \"" + longName + "\": 2}}"), "m.x"))
        .isEqualTo(" (\"m\" has \"a\\\"b\\n\", \"" + "n".repeat(CommandTemplate.MAX_LISTED_NAME_CHARS) + "\u2026\")");
    // a character that would not show (a bidirectional override, a zero-width space) is written as its escape
    assertThat(CommandTemplate.missingReason(json("{\"m\": {\"a\u202Eb\u200B\": 1, \"\u0628\u200C\u0627\": 2}}"), "m.x"))
        .isEqualTo(" (\"m\" has \"a\\u202Eb\\u200B\", \"\u0628\u200C\u0627\")"); // a joiner inside a word stays
    String emoji = "\uD83D\uDE00".repeat(CommandTemplate.MAX_LISTED_NAME_CHARS + 1); // cut between pairs, never inside one
    assertThat(CommandTemplate.missingReason(json("{\"m\": {\"" + emoji + "\": 1}}"), "m.x"))
        .isEqualTo(" (\"m\" has \"" + "\uD83D\uDE00".repeat(CommandTemplate.MAX_LISTED_NAME_CHARS) + "\u2026\")");
    assertThat(CommandTemplate.missingReason(json("{\"choices\": [{\"text\": \"a\"}]}"), "choices.1.text"))
        .isEqualTo(" (\"choices\" is an array of 1 element, indexed from 0)");
    // an index has one spelling: 01 is no index (it read element 1 before)
    assertThat(CommandTemplate.valueAt(json("{\"a\": [\"x\", \"y\"]}"), "a.01")).isNull();
    assertThat(CommandTemplate.valueAt(json("{\"a\": [\"x\", \"y\"]}"), "a.00")).isNull();
    assertThat(CommandTemplate.valueAt(json("{\"a\": [\"x\", \"y\"]}"), "a.0").textValue()).isEqualTo("x");
    assertThat(CommandTemplate.valueAt(json("{\"a\": {\"01\": \"m\"}}"), "a.01").textValue()).isEqualTo("m");
    assertThat(CommandTemplate.missingReason(json("{\"a\": [\"x\", \"y\"]}"), "a.01"))
        .isEqualTo(" (\"a\" is an array of 2 elements, indexed from 0 with no leading zeros)");
    assertThat(CommandTemplate.missingReason(json("{\"choices\": [{\"text\": \"a\"}]}"), "choices.0.txt"))
        .isEqualTo(" (\"choices.0\" has \"text\")");
    // a CSV column is a string unless --csv-types says json: the hint names the column
    assertThat(CommandTemplate.missingReason(json("{\"meta\": \" {\\\"lang\\\": \\\"fr\\\"}\"}"), "meta.lang"))
        .isEqualTo(" (\"meta\" is a string of JSON text, not an object or array: for a CSV column, give --csv-types meta:json)");
    assertThat(CommandTemplate.missingReason(json("{\"a\": {\"b\": \"[1]\"}}"), "a.b.0"))
        .isEqualTo(" (\"a.b\" is a string of JSON text, not an object or array)");
    assertThat(CommandTemplate.missingReason(json("{\"meta\": \"fr\"}"), "meta.lang"))
        .isEqualTo(" (\"meta\" is a string, not an object or array)");
    assertThat(CommandTemplate.missingReason(json("{\"meta\": null}"), "meta.lang")).isEqualTo(" (\"meta\" is null, not an object or array)");
    assertThat(CommandTemplate.missingReason(json("{\"meta\": 3}"), "meta.lang")).isEqualTo(" (\"meta\" is a number, not an object or array)");
    assertThat(CommandTemplate.missingReason(json("{\"meta\": true}"), "meta.lang")).isEqualTo(" (\"meta\" is a boolean, not an object or array)");
    // a path that is there is not missing
    assertThat(CommandTemplate.missingReason(json("{\"meta\": {\"lang\": \"fr\"}}"), "meta.lang")).isEmpty();
  }

  @Test
  void bracesAroundWhatIsNoFieldPathAreLiteral() throws Exception {
    CommandTemplate t = CommandTemplate.parse("x {a.} {.a} {a..b} {1.a} {a.b-c} {a.b c}");
    assertThat(t.fields()).isEmpty();
    assertThat(t.fill(json("{}"))).containsExactly("x", "{a.}", "{.a}", "{a..b}", "{1.a}", "{a.b-c}", "{a.b", "c}");
  }

  @Test
  void aMissingFieldNamesTheField() {
    CommandTemplate t = CommandTemplate.parse("echo {nope}");
    assertThatThrownBy(() -> t.fill(json("{}")))
        .isInstanceOf(CommandTemplate.MissingFieldException.class)
        .hasMessageContaining("'nope'");
  }

  @Test
  void fieldsAreThePlaceholdersOnlyNotEscapedOrNonIdentifierBraces() throws Exception {
    CommandTemplate t = CommandTemplate.parse("sh -c 'echo ${{HOME}} {\"a\":1} {print $1} {x}' {id} {x} {y}");
    assertThat(t.fields()).containsExactly("x", "id", "y");
    assertThat(t.missingField(json("{\"x\": 1, \"id\": \"a\", \"y\": null}"))).isEmpty();
    assertThat(t.missingField(json("{\"x\": 1, \"HOME\": \"/\"}"))).contains("id");
    assertThat(CommandTemplate.parse("sh -c \"echo ${{HOME}}\"").fields()).isEmpty();
  }

  @Test
  void anEmptyTemplateIsRefused() {
    assertThatThrownBy(() -> CommandTemplate.parse("   ")).isInstanceOf(IllegalArgumentException.class);
  }

  // ---- shell scripts: placeholders are shell-quoted ------------------------------------------------

  @Test
  void aPlaceholderInsideAShellScriptIsSingleQuoted() throws Exception {
    CommandTemplate t = CommandTemplate.parse("sh -c 'echo {id}; echo done'");
    assertThat(t.fill(json("{\"id\": \"a; touch /tmp/x\"}")))
        .containsExactly("sh", "-c", "echo 'a; touch /tmp/x'; echo done");
    assertThat(t.fill(json("{\"id\": \"it's\"}"))).containsExactly("sh", "-c", "echo 'it'\\''s'; echo done");
    assertThat(t.fill(json("{\"id\": \"\"}"))).containsExactly("sh", "-c", "echo ''; echo done");
    assertThat(t.fill(json("{\"id\": 7}"))).containsExactly("sh", "-c", "echo '7'; echo done");
  }

  @Test
  void aPlaceholderThatIsTheWholeScriptOrAWholeArgumentStaysAsItIs() throws Exception {
    assertThat(CommandTemplate.parse("sh -c {script}").fill(json("{\"script\": \"echo a; exit 3\"}")))
        .containsExactly("sh", "-c", "echo a; exit 3");
    assertThat(CommandTemplate.parse("sh -c 'echo \"$1\"' sh {id} x{id}").fill(json("{\"id\": \"a b\"}")))
        .as("the script's arguments are not script").containsExactly("sh", "-c", "echo \"$1\"", "sh", "a b", "xa b");
    assertThat(CommandTemplate.parse("sh run.sh --id={id}").fill(json("{\"id\": \"a b\"}")))
        .as("a shell running a file has no script argument").containsExactly("sh", "run.sh", "--id=a b");
    assertThat(CommandTemplate.parse("python3 -c 'print({id})'").fill(json("{\"id\": \"1\"}")))
        .as("not a shell").containsExactly("python3", "-c", "print(1)");
  }

  @Test
  void theRawFormIsInsertedAsItIsAnywhere() throws Exception {
    CommandTemplate t = CommandTemplate.parse("sh -c 'echo \"{raw:id}\" {raw:id}' {raw:id}");
    assertThat(t.fields()).containsExactly("id");
    assertThat(t.fill(json("{\"id\": \"a b\"}"))).containsExactly("sh", "-c", "echo \"a b\" a b", "a b");
    assertThat(CommandTemplate.parse("echo {{raw:id}}").fill(json("{}"))).as("escaped braces stay literal")
        .containsExactly("echo", "{raw:id}");
  }

  @Test
  void shellsAreRecognisedByAnyPathBehindAnyCommandWithTheirOptionClusters() throws Exception {
    for (String template : List.of("/bin/sh -c 'echo {id}'", "env sh -c 'echo {id}'", "/usr/bin/env -i PATH=/bin bash -c 'echo {id}'",
        "bash -ec 'echo {id}'", "bash -o pipefail -c 'echo {id}'", "sh -c -- 'echo {id}'", "dash -xc 'echo {id}'",
        "zsh -c 'echo {id}'", "ksh -c 'echo {id}'", "timeout 5 sh -c 'echo {id}'", "bash --norc -c 'echo {id}'",
        "sh -e -c 'echo {id}'")) {
      List<String> args = CommandTemplate.parse(template).fill(json("{\"id\": \"a;b\"}"));
      assertThat(args.get(args.size() - 1)).as(template).isEqualTo("echo 'a;b'");
    }
    // -o takes the next argument as its value: pipefail is not the script.
    assertThat(CommandTemplate.parse("bash -o pipefail {id}").fill(json("{\"id\": \"a b\"}")))
        .containsExactly("bash", "-o", "pipefail", "a b");
  }

  @Test
  void placesWhereAQuotedWordIsOneWordOfTextAreAllowed() throws Exception {
    assertThat(CommandTemplate.parse("sh -c 'x=$(printf %s {id}); echo \"$x\"'").fill(json("{\"id\": \"a b\"}")).get(2))
        .isEqualTo("x=$(printf %s 'a b'); echo \"$x\"");
    assertThat(CommandTemplate.parse("sh -c 'echo ${{x:-{id}}}'").fill(json("{\"id\": \"v\"}")).get(2))
        .isEqualTo("echo ${x:-'v'}");
    assertThat(CommandTemplate.parse("bash -c 'cat <<<{id}'").fill(json("{\"id\": \"v\"}")).get(2)).isEqualTo("cat <<<'v'");
    assertThat(CommandTemplate.parse("sh -c 'cat <<EOF\nhello\nEOF\necho {id}'").fill(json("{\"id\": \"v\"}")).get(2))
        .as("after the here-document").isEqualTo("cat <<EOF\nhello\nEOF\necho 'v'");
    assertThat(CommandTemplate.parse("sh -c 'echo \"a\" {id} # the end'").fill(json("{\"id\": \"v\"}")).get(2))
        .isEqualTo("echo \"a\" 'v' # the end");
    assertThat(CommandTemplate.parse("sh -c 'echo a#{id}'").fill(json("{\"id\": \"v\"}")).get(2))
        .as("# inside a word starts no comment").isEqualTo("echo a#'v'");
  }

  static Stream<Arguments> unquotablePlaces() {
    return Stream.of(
        Arguments.of("sh -c 'echo \"{id}\"'", 14, "inside double quotes"),
        Arguments.of("sh -c \"echo '{id}'\"", 14, "inside single quotes"),
        Arguments.of("bash -c 'echo $''{id}'''", 18, "inside $'...'"),
        Arguments.of("sh -c 'echo `echo {id}`'", 19, "inside `...`"),
        Arguments.of("sh -c 'echo $(( {id} + 1 ))'", 17, "inside $((...))"),
        Arguments.of("sh -c 'echo \"$(echo {id})\"'", 21, "inside double quotes"),
        Arguments.of("sh -c 'echo hi # {id}'", 18, "in a comment"),
        Arguments.of("sh -c 'cat <<EOF\n{id}\nEOF'", 18, "in a here-document"),
        Arguments.of("sh -c 'cat <<-{id}'", 15, "in a here-document's delimiter"),
        Arguments.of("sh -c 'echo \\{id}'", 14, "right after a backslash"),
        Arguments.of("sh -c 'echo ${id}'", 14, "right after a $"),
        // Arithmetic takes a quoted value as an expression, whose subscript runs a $(...) in it (the breaker's round).
        Arguments.of("bash -c '(( {id} ))'", 13, "inside ((...))"),
        Arguments.of("bash -c 'for (( i={id}; i<3; i++ )); do :; done'", 19, "inside ((...))"),
        Arguments.of("bash -c 'echo $[ {id} + 1 ]'", 18, "inside $[...]"),
        Arguments.of("bash -c 'a=(1); echo ${a[{id}]}'", 26, "inside an array subscript"),
        Arguments.of("bash -c 'echo ${#a[{id}]}'", 20, "inside an array subscript"),
        Arguments.of("bash -c 'a[{id}]=1'", 12, "inside an array subscript"),
        Arguments.of("bash -c 'a=([{id}]=1)'", 14, "inside an array subscript"),
        Arguments.of("bash -c 's=abc; echo ${s:{id}}'", 26, "in the offset of ${name:offset}"),
        Arguments.of("bash -c 'echo ${x{id}}'", 18, "inside ${...} before its operator"),
        Arguments.of("bash -c '[[ {id} -eq 0 ]]'", 13, "inside [[ ... ]]"),
        Arguments.of("bash -c 'let v={id}'", 16, "in an argument of let"),
        Arguments.of("bash -c 'declare -ri v={id}'", 24, "in a declaration of numeric variables"),
        Arguments.of("rbash -c 'echo \"{id}\"'", 17, "inside double quotes"),
        Arguments.of("ksh -c 'integer v={id}'", 19, "in a declaration of numeric variables"),
        Arguments.of("zsh -c 'float v={id}'", 17, "in a declaration of numeric variables"),
        Arguments.of("ksh -c '[ {id} -eq 0 ]'", 11, "in a test command, whose numeric comparisons"),
        Arguments.of("mksh -c 'if test {id} -gt 1; then :; fi'", 18, "in a test command, whose numeric comparisons"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("unquotablePlaces")
  void aPlaceholderWhereQuotingWouldBreakIsRefusedWithItsColumnAndTheWaysOut(String template, int column, String where) {
    assertThatThrownBy(() -> CommandTemplate.parse(template)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("column " + column + ": the placeholder {id} is " + where)
        .hasMessageContaining("in the script that ")
        .hasMessageContaining("pass it as an argument")
        .hasMessageContaining("{raw:id}");
    assertThat(template.charAt(column - 1)).as("the column points at the placeholder").isEqualTo('{');
    assertThat(CommandTemplate.parse(template.replace("{id}", "{raw:id}")).fields()).as("raw is taken there").containsExactly("id");
  }

  /**
   * What the scan lets through, run by bash with values made to run as code there: a $(...) in an arithmetic
   * subscript, a quote that would end the word, a command separator. Nothing runs. The first template,
   * with {raw:id}, shows that the values do run code where the scan refuses the quoted form.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"bash -c 'echo {id}'", "bash -c '[ {id} = x ] || echo no'", "bash -c '[ {id} -eq 0 ] 2>/dev/null; echo $?'",
      "bash -c 'echo ${{x:-{id}}} ${{x:+{id}}} ${{x#{id}}} ${{x/{id}/y}}'", "bash -c 'let v=1; echo {id}'",
      "bash -c 'echo a[1] {id}'", "bash -c 'case {id} in x*) echo m;; esac'", "bash -c 'x=$(printf %s {id}); echo \"$x\"'",
      "bash -c 'declare -r v={id}; echo \"$v\"'", "bash -c 'r=$([ {id} = x ] && echo y); echo \"$r\"'", "bash -c 'f() {{ local v={id}; echo \"$v\"; }}; f'",
      "bash -c 'grep -v {id} /dev/null; echo ok'", "bash -c 'export X={id}; echo \"$X\"'", "bash -c 'a=( {id} ); echo \"${{a[0]}}\"'",
      "bash -c 'printf -v out %s {id}; echo \"$out\"'", "bash -c 'while [ -n {id} ]; do break; done'"})
  void noPlaceTheScanAllowsRunsAValueAsCode(String template, @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Path victim = dir.resolve("victim");
    List<String> values = List.of("x[$(touch " + victim + ")]", "a; touch " + victim, "$(touch " + victim + ")",
        "'; touch " + victim + "; '", "`touch " + victim + "`", "a[$(touch " + victim + ")]=1");
    assertThat(runs("bash -c '(( {raw:id} ))'", values.get(0), victim)).as("the value runs code in arithmetic, unquoted").isTrue();
    for (String value : values) {
      assertThat(runs(template, value, victim)).as("%s with the value %s", template, value).isFalse();
    }
  }

  /** Whether running {@code template} filled with {@code id} created {@code victim} (which it then deletes). */
  private static boolean runs(String template, String id, java.nio.file.Path victim) throws Exception {
    JsonNode c = new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode().put("id", id);
    Process p = new ProcessBuilder(CommandTemplate.parse(template).fill(c)).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    assertThat(p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).as("%s ended", template).isTrue();
    return java.nio.file.Files.deleteIfExists(victim);
  }

  /**
   * The second breaker's round: templates the scan let through, in which a value ran as code. Each is refused
   * now, at its placeholder's column (the first {id} of a template that has two).
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {
      "bash -c 'for((i=0;i<{id};i++)); do :; done'", "bash -c 'if(({id})); then :; fi'", "bash -c 'while(({id})); do break; done'",
      "bash -c '\\let y={id}'", "bash -c \"'let' y={id}\"", "bash -c 'l\"e\"t y={id}'", "bash -c 'declare -ia z=() y={id}'",
      "bash -c 'a=( [{id}]=1 )'", "bash -c 'declare {id}=1'", "bash -c 'export {id}=1'", "bash -c 'printf -v {id} x'",
      "bash -c 'read {id} <<< x'", "bash -c 'unset {id}'", "bash -c 'mapfile {id} < /dev/null'", "bash -c '[ -v {id} ]'",
      "bash -c 'test -v {id}'", "bash -c 'if [ -R {id} ]; then :; fi'", "bash -c 'declare -n r={id}; echo $r'",
      "bash -c 'declare -a a={id}'", "bash -c 'local -A m={id}'",
      "sh -c \"echo $(#'\necho '{id}' )\"", "sh -c \"echo $'\\'' {id} '\"", "dash -c \"echo $'\\'' {id} '\"",
      "bash -c \"let x=1 <<E\n{id}\nE\"", "bash -c \"cat <<$(x)\n$\n{id}\n$(x)\"", "bash -c \"cat <<`x`\nx\n`x`\necho {id}\"",
      "bash {id} -c 'echo {id}'", "sh -e{id} -c 'echo {id}'"})
  void whatTheSecondBreakerRanAsCodeIsRefused(String template) {
    assertThatThrownBy(() -> CommandTemplate.parse(template)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("column " + (template.indexOf("{id}") + 1) + ": the placeholder {id} ");
  }

  /** env -S splits its string again: a value there would not stay one argument (the breaker's round). */
  @Test
  void aPlaceholderInEnvSplitStringIsRefused() throws Exception {
    for (String template : List.of("env -S 'sh -c \"echo {id}\"'", "/usr/bin/env -i '-Secho {id}'", "env '--split-string=echo {id}'",
        "env --split-string 'echo {id}'", "env -vS \"sh -c 'echo {id}'\"", "env -u FOO -S \"sh -c 'echo {id}'\"",
        "env -C /tmp -S \"sh -c 'echo {id}'\"", "env -iuFOO -S 'echo {id}'", "env --unset FOO --split-string 'echo {id}'",
        "env --chdir /tmp -S 'echo {id}'")) {
      assertThatThrownBy(() -> CommandTemplate.parse(template)).as(template).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("the placeholder {id} is in the string that env -S splits into arguments again")
          .hasMessageStartingWith("column " + (template.indexOf("{id}") + 1) + ":");
    }
    assertThat(CommandTemplate.parse("env -S 'printf %s' {id}").fill(json("{\"id\": \"a b\"}")))
        .containsExactly("env", "-S", "printf %s", "a b");
    assertThat(CommandTemplate.parse("env FOO=1 printf -S {id}").fill(json("{\"id\": \"v\"}"))).as("after env's operand")
        .containsExactly("env", "FOO=1", "printf", "-S", "v");
  }

  /** bash's and dash's test take -eq's operands as integers, not arithmetic: a test there takes a placeholder. */
  @Test
  void aTestCommandTakesAPlaceholderWhereTheShellsTestDoesNoArithmetic() throws Exception {
    assertThat(CommandTemplate.parse("sh -c '[ {id} -eq 0 ] && test {id} -gt 1'").fill(json("{\"id\": \"7\"}")).get(2))
        .isEqualTo("[ '7' -eq 0 ] && test '7' -gt 1");
    assertThat(CommandTemplate.parse("ksh -c 'test 1 -eq 1; echo {id}'").fields()).as("after the test command").containsExactly("id");
  }

  @Test
  void theRefusalNamesTheShellAndItsOptions() {
    assertThatThrownBy(() -> CommandTemplate.parse("/bin/bash -ec 'echo \"{x}\"'"))
        .hasMessageContaining("in the script that /bin/bash -ec runs")
        .hasMessageContaining("/bin/bash -ec 'echo \"$1\"' sh {x}");
  }

  // ---- splitting is what it was -----------------------------------------------------------------

  /**
   * The template splitter replaced commons-text's {@code StringTokenizer} (split and quote matchers, empty
   * tokens dropped) so that each character keeps its column; it must split every template as that did.
   */
  @Property(tries = 3_000)
  void splitsEveryTemplateAsCommonsTextDid(@ForAll("templates") String template) throws Exception {
    List<String> before = commonsText(template);
    String unclosed;
    try {
      CommandTemplate.parse(template);
      unclosed = null;
    } catch (IllegalArgumentException e) {
      unclosed = e.getMessage().contains("is never closed") ? e.getMessage() : null;
    }
    if (unclosed != null) {
      // Refused only where commons-text closed the quote at the end: closed there, the two agree again.
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("the (single|double) quote at column (\\d+)").matcher(unclosed);
      assertThat(m.find()).as(unclosed).isTrue();
      char quote = m.group(1).equals("single") ? '\'' : '"';
      assertThat(template.charAt(Integer.parseInt(m.group(2)) - 1)).isEqualTo(quote);
      String closed = template + quote;
      assertThat(commonsText(closed)).isEqualTo(before);
      if (before.isEmpty()) {
        assertThatThrownBy(() -> CommandTemplate.parse(closed)).hasMessageContaining("no command");
      } else {
        assertThat(CommandTemplate.parse(closed).fill(json("{}"))).isEqualTo(before);
      }
      return;
    }
    if (before.isEmpty()) {
      assertThatThrownBy(() -> CommandTemplate.parse(template)).hasMessageContaining("no command");
      return;
    }
    // Without braces there are no placeholders, so filling returns the arguments as split.
    assertThat(CommandTemplate.parse(template).fill(json("{}"))).isEqualTo(before);
  }

  private static List<String> commonsText(String template) {
    return new org.apache.commons.text.StringTokenizer(template,
        org.apache.commons.text.matcher.StringMatcherFactory.INSTANCE.splitMatcher(),
        org.apache.commons.text.matcher.StringMatcherFactory.INSTANCE.quoteMatcher()).getTokenList();
  }

  @Test
  void aQuoteThatIsNeverClosedIsRefusedNamingItsColumn() throws Exception {
    assertThatThrownBy(() -> CommandTemplate.parse("echo \"abc")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("exec cmd: the double quote at column 6 is never closed: 'echo \"abc'");
    assertThatThrownBy(() -> CommandTemplate.parse("sh -c 'echo {id}")).hasMessageContaining("single quote at column 7");
    assertThatThrownBy(() -> CommandTemplate.parse("echo 'it''s")).hasMessageContaining("single quote at column 6");
    assertThat(CommandTemplate.parse("echo 'it''s'").fill(json("{}"))).containsExactly("echo", "it's");
    assertThat(CommandTemplate.parse("echo a\\ b").fill(json("{}"))).as("a backslash is a character")
        .containsExactly("echo", "a\\", "b");
  }

  @Provide
  Arbitrary<String> templates() {
    return Arbitraries.strings().withChars('a', 'b', ' ', '\t', '\n', '\'', '"', 'c', '-').ofMaxLength(24);
  }
}
