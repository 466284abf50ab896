package dev.tally.datasets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseSourceException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each reader on files in its documented shape, detection and forcing, ids, and the selection options. */
class DatasetReaderTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private Path file(String name, String text) throws Exception {
    return Files.writeString(dir.resolve(name), text);
  }

  static List<CaseRecord> read(Path file, ReadOptions options) throws Exception {
    List<CaseRecord> cases = new ArrayList<>();
    try (DatasetReader reader = DatasetReader.open(file, options)) {
      for (CaseRecord c; (c = reader.next()) != null; ) {
        assertThat(c.position()).isEqualTo(cases.size());
        cases.add(c);
      }
    }
    return cases;
  }

  static List<CaseRecord> read(Path file) throws Exception {
    return read(file, ReadOptions.DEFAULT);
  }

  static JsonNode json(CaseRecord c) throws Exception {
    return JSON.readTree(c.caseJson());
  }

  private static ReadOptions format(String name) {
    return new ReadOptions(name, CsvTypes.NONE, null, null, 0, null);
  }

  private static String formatOf(Path file, ReadOptions options) throws Exception {
    try (DatasetReader reader = DatasetReader.open(file, options)) {
      return reader.format().describe();
    }
  }

  // JSON Lines

  @Test
  void jsonLinesWithIdsAreKeptByteForByteAndLinesAreTheFilesLines() throws Exception {
    Path f = file("cases.jsonl", "{\"id\": \"a\",  \"x\": 1}\n\n{\"id\":\"b\"}\n");
    List<CaseRecord> cases = read(f);
    assertThat(cases).extracting(CaseRecord::caseId).containsExactly("a", "b");
    assertThat(cases.get(0).caseJson()).isEqualTo("{\"id\": \"a\",  \"x\": 1}");
    try (DatasetReader reader = DatasetReader.open(f, ReadOptions.DEFAULT)) {
      reader.next();
      reader.next();
      assertThat(reader.lineOf(1)).isEqualTo(3);
    }
  }

  @Test
  void aJsonLinesCaseWithoutAnIdGetsOneFromItsContentFirstInItsJson() throws Exception {
    Path f = file("cases.jsonl", "{\"question\":\"1+1\",\"target\":\"2\"}\n");
    CaseRecord c = read(f).get(0);
    assertThat(c.caseId()).matches("c-[0-9a-f]{12}");
    assertThat(c.caseJson()).startsWith("{\"id\":\"" + c.caseId() + "\",\"question\":\"1+1\"");
  }

  /**
   * A number beyond a double's range was read as infinity: a local run stored it as the string "Infinity"
   * and the server passed Infinity to the command. Every format refuses it, naming the field.
   */
  @Test
  void aNumberBeyondADoublesRangeIsRefusedInEveryFormatNamingItsField() throws Exception {
    String why = " is a number beyond the range of a double (about 1.8e308 either way), which Tally would change to"
        + " infinity; write it as a string";
    Path jsonl = file("big.jsonl", "{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"m\":{\"w\":[0, -1e400]}}\n");
    assertThatThrownBy(() -> read(jsonl)).hasMessage(jsonl + " line 2: field \"m.w.1\"" + why);
    Path noId = file("noid.jsonl", "{\"v\":1e999999999}\n");
    assertThatThrownBy(() -> read(noId)).hasMessage(noId + " line 1: field \"v\"" + why);
    Path yaml = file("big.yaml", "- id: a\n  v: 1.0e+400\n");
    assertThatThrownBy(() -> read(yaml)).hasMessageContaining("field \"v\"" + why);
    Path json = file("big.json", "[{\"id\": \"a\", \"v\": 2e308}]");
    assertThatThrownBy(() -> read(json)).hasMessageContaining("field \"v\"" + why);
    // the largest double, a long integer and a tiny fraction are numbers as before
    Path fine = file("fine.jsonl", "{\"id\":\"a\",\"v\":1.7976931348623157e308,\"n\":123456789012345678901234567}\n");
    assertThat(json(read(fine).get(0)).get("n").bigIntegerValue()).isEqualTo(new java.math.BigInteger("123456789012345678901234567"));
  }

  @Test
  void jsonLinesErrorsAreTheCaseGrammarsWithFileAndLine() throws Exception {
    Path f = file("cases.jsonl", "{\"id\":\"a\"}\n[1]\n");
    assertThatThrownBy(() -> read(f)).isInstanceOf(CaseSourceException.class)
        .hasMessage(f + " line 2: expected a JSON object, got array");
    Path g = file("ids.jsonl", "{\"id\":\"a\"}\n{\"id\":7}\n");
    assertThatThrownBy(() -> read(g)).hasMessage(g + " line 2: \"id\" must be a non-empty string, got 7");
  }

  // JSON array

  @Test
  void aJsonArrayIsReadElementByElementWithTheLineEachStartsOn() throws Exception {
    Path f = file("cases.json", "[\n  {\"id\": \"a\", \"input\": \"x\"},\n  {\"input\": \"y\"}\n]\n");
    List<CaseRecord> cases = read(f);
    assertThat(cases).hasSize(2);
    assertThat(cases.get(0).caseJson()).isEqualTo("{\"id\":\"a\",\"input\":\"x\"}");
    assertThat(cases.get(1).caseId()).startsWith("c-");
    Path bad = file("bad.json", "[\n  {\"id\": \"a\"},\n  3\n]");
    assertThatThrownBy(() -> read(bad)).hasMessage(bad + " line 3: expected an object as a record, got a number");
    Path dup = file("dup.json", "[\n{\"id\": \"a\",\n \"id\": \"b\"}]");
    assertThatThrownBy(() -> read(dup)).hasMessageStartingWith(dup + " line 3: not valid: Duplicate field 'id'");
    Path trailing = file("trailing.json", "[{\"id\": \"a\"}]\n{}");
    assertThatThrownBy(() -> read(trailing)).hasMessage(trailing + " line 2: text after the list of records");
  }

  // CSV

  @Test
  void csvCellsAreStringsUnlessTypedAndQuotedNewlinesStayInTheirCell() throws Exception {
    Path f = file("cases.csv", "id,question,answer,ok,extra\n"
        + "a,\"two\nlines\",42,true,\"{\"\"k\"\": [1]}\"\n"
        + "b,plain,,false,null\n");
    List<CaseRecord> strings = read(f);
    assertThat(json(strings.get(0)).get("answer").isTextual()).isTrue();
    assertThat(json(strings.get(0)).get("question").asText()).isEqualTo("two\nlines");
    List<CaseRecord> typed = read(f, new ReadOptions(null, CsvTypes.parse("answer:int,ok:bool,extra:json"), null, null, 0, null));
    JsonNode a = json(typed.get(0));
    assertThat(a.get("answer").asLong()).isEqualTo(42);
    assertThat(a.get("ok").asBoolean()).isTrue();
    assertThat(a.get("extra").get("k").get(0).asInt()).isEqualTo(1);
    JsonNode b = json(typed.get(1));
    assertThat(b.get("answer").isNull()).as("an empty typed cell is null").isTrue();
    assertThat(b.get("ok").asBoolean()).isFalse();
  }

  @Test
  void aBadCsvCellNamesFileLineRowAndColumn() throws Exception {
    Path f = file("cases.csv", "id,n\na,1\nb,x\n");
    assertThatThrownBy(() -> read(f, new ReadOptions(null, CsvTypes.parse("n:int"), null, null, 0, null)))
        .hasMessage(f + " line 3: row 2: column \"n\": \"x\" is not an int");
    Path f2 = file("floats.csv", "id,p\na,NaN\n");
    assertThatThrownBy(() -> read(f2, new ReadOptions(null, CsvTypes.parse("p:float"), null, null, 0, null)))
        .hasMessage(f2 + " line 2: row 1: column \"p\": \"NaN\" is not a finite float");
    Path ragged = file("ragged.csv", "id,n\na,1\nb,2,3\n");
    assertThatThrownBy(() -> read(ragged)).hasMessageStartingWith(ragged + " line 3: row 2: not valid CSV");
    Path missing = file("missing.csv", "id,n\na\n");
    assertThatThrownBy(() -> read(missing)).hasMessageStartingWith(missing + " line 2: row 1: not valid CSV");
    assertThatThrownBy(() -> read(f, new ReadOptions(null, CsvTypes.parse("m:int"), null, null, 0, null)))
        .hasMessage(f + " line 1: --csv-types names column \"m\", which the header does not have; its columns are id, n");
    Path twice = file("twice.csv", "id,n,n\na,1,2\n");
    assertThatThrownBy(() -> read(twice)).hasMessage(twice + " line 1: the header names column \"n\" twice");
    // A quote never closed is found at the end of the file, past every line: the row is placed where it starts.
    Path unclosed = file("unclosed.csv", "id,q\na,1\nb,2\nc,\"x\n");
    assertThatThrownBy(() -> read(unclosed)).hasMessage(unclosed + " line 4: row 3: not valid CSV: Missing closing quote for value");
    Path empty = file("empty.csv", "");
    assertThatThrownBy(() -> read(empty)).hasMessageStartingWith(empty + " line 1: no header row: a CSV dataset's first line names its columns");
  }

  @Test
  void aCharacterYamlRefusesIsPlacedByItsPositionNotAtLineOne() throws Exception {
    Path f = file("ctl.yaml", "- id: a\n- id: b\n- id: c\n- id: d\n  x: \"\u0001\"\n");
    assertThatThrownBy(() -> read(f)).hasMessage(f + ": character 39 of the file is U+0001, which YAML does not allow"
        + " (a control character other than tab, line feed or carriage return)");
  }

  /** The breaker's round: a key that is a list or a map named SnakeYAML's event class and its fields. */
  @Test
  void aYamlKeyThatIsAListOrAMapIsSaidInYamlsWords() throws Exception {
    Path list = file("listkey.yaml", "- id: a\n  ? [x, y]\n  : 1\n");
    assertThatThrownBy(() -> read(list)).hasMessageContaining(list + " line 2: not valid: a key must be plain text, got a list")
        .hasMessageNotContaining("snakeyaml");
    Path map = file("mapkey.yaml", "- id: a\n  {x: 1}: 2\n");
    assertThatThrownBy(() -> read(map)).hasMessageContaining("a key must be plain text, got a map").hasMessageNotContaining("snakeyaml");
  }

  @Test
  void csvTypesGrammarRefusesWhatItCannotRead() {
    assertThatThrownBy(() -> CsvTypes.parse("n")).hasMessageContaining("\"n\" is not COLUMN:TYPE");
    assertThatThrownBy(() -> CsvTypes.parse("n:integer")).hasMessage(
        "column \"n\": unknown type \"integer\"; the types are string, int, float, bool, json");
    assertThatThrownBy(() -> CsvTypes.parse("n:int,n:float")).hasMessage("column \"n\" is typed twice");
    assertThat(CsvTypes.parse("a:int, b:json").toString()).isEqualTo("a:int,b:json");
  }

  @Test
  void aCsvByteOrderMarkIsNotPartOfTheFirstColumnsName() throws Exception {
    Path f = dir.resolve("bom.csv");
    Files.write(f, ("\uFEFFid,q\na,1\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(read(f).get(0).caseId()).isEqualTo("a");
  }

  // openai/evals

  @Test
  void openaiEvalsSamplesMapIdealToTargetWithStringOrChatInputs() throws Exception {
    Path f = file("samples.jsonl",
        "{\"input\": [{\"role\": \"system\", \"content\": \"Answer with a number.\"}, {\"role\": \"user\", \"content\": \"2+2\"}], \"ideal\": \"4\"}\n"
            + "{\"input\": \"3+3\", \"ideal\": [\"6\", \"six\"]}\n");
    assertThat(formatOf(f, ReadOptions.DEFAULT)).isEqualTo("openai-evals (jsonl)");
    List<CaseRecord> cases = read(f);
    JsonNode first = json(cases.get(0));
    assertThat(first.get("target").asText()).isEqualTo("4");
    assertThat(first.has("ideal")).isFalse();
    assertThat(first.get("input").get(1).get("content").asText()).isEqualTo("2+2");
    assertThat(json(cases.get(1)).get("target").get(1).asText()).isEqualTo("six");
    assertThat(cases.get(0).caseId()).startsWith("c-");
  }

  @Test
  void aBadOpenaiEvalsSampleNamesItsLineAndField() throws Exception {
    Path f = file("samples.jsonl", "{\"input\": \"1\", \"ideal\": \"1\"}\n{\"input\": \"2\", \"ideal\": 2}\n");
    assertThatThrownBy(() -> read(f)).hasMessage(f + " line 2: field \"ideal\": must be a string or a list of strings, got 2");
    Path g = file("chat.jsonl", "{\"input\": [{\"content\": \"hi\"}], \"ideal\": \"1\"}\n");
    assertThatThrownBy(() -> read(g)).hasMessage(g + " line 1: field \"input[0].role\": must be a string (system, user, assistant...), got nothing");
    Path h = file("noinput.jsonl", "{\"ideal\": \"1\"}\n");
    assertThatThrownBy(() -> read(h)).hasMessage(h + " line 1: field \"input\": is missing");
  }

  // Inspect

  @Test
  void inspectSamplesKeepTheirFieldsAndAnIntegerIdBecomesText() throws Exception {
    Path f = file("inspect.json", "[\n {\"id\": 1, \"input\": [{\"role\": \"user\", \"content\": \"Pick one\"}],"
        + " \"choices\": [\"red\", \"blue\"], \"target\": \"B\", \"metadata\": {\"subject\": \"colour\"},"
        + " \"files\": {\"a.txt\": \"hello\"}, \"setup\": \"echo hi\"}\n]");
    assertThat(formatOf(f, ReadOptions.DEFAULT)).isEqualTo("inspect (json)");
    CaseRecord c = read(f).get(0);
    assertThat(c.caseId()).isEqualTo("1");
    JsonNode n = json(c);
    assertThat(n.get("choices").size()).isEqualTo(2);
    assertThat(n.get("metadata").get("subject").asText()).isEqualTo("colour");
    assertThat(n.get("files").get("a.txt").asText()).isEqualTo("hello");
    assertThat(n.get("setup").asText()).isEqualTo("echo hi");
    Path bad = file("bad.jsonl", "{\"input\": \"x\", \"target\": \"A\", \"choices\": [\"a\", 2]}\n");
    assertThatThrownBy(() -> read(bad)).hasMessage(bad + " line 1: field \"choices\": must be a list of strings, got [\"a\",2]");
  }

  // promptfoo

  @Test
  void promptfooYamlTestsSpreadVarsKeepAssertAndDescribeInMetadata() throws Exception {
    Path f = file("tests.yaml", """
        # arithmetic
        - description: adds
          vars:
            question: What is 2 + 3?
            topic: sums
          assert:
            - type: equals
              value: "5"
        - vars:
            question: Is 7 prime?
          assert:
            - type: icontains
              value: yes
          metadata:
            level: easy
        """);
    assertThat(formatOf(f, ReadOptions.DEFAULT)).isEqualTo("promptfoo (yaml)");
    List<CaseRecord> cases = read(f);
    JsonNode a = json(cases.get(0));
    assertThat(a.get("question").asText()).isEqualTo("What is 2 + 3?");
    assertThat(a.get("vars").get("topic").asText()).isEqualTo("sums");
    assertThat(a.get("assert").get(0).get("type").asText()).isEqualTo("equals");
    assertThat(a.get("target").asText()).isEqualTo("5");
    assertThat(a.get("metadata").get("description").asText()).isEqualTo("adds");
    assertThat(a.has("description")).isFalse();
    JsonNode b = json(cases.get(1));
    assertThat(b.has("target")).as("no equals assertion, no target").isFalse();
    assertThat(b.get("metadata").get("level").asText()).isEqualTo("easy");
    try (DatasetReader reader = DatasetReader.open(f, ReadOptions.DEFAULT)) {
      reader.next();
      reader.next();
      assertThat(reader.lineOf(1)).isEqualTo(9);
    }
  }

  @Test
  void aPromptfooConfigurationsTestsAreItsRecords() throws Exception {
    Path f = file("promptfooconfig.yaml", """
        prompts: ["Answer: {{question}}"]
        providers: [echo]
        tests:
          - vars: {question: "1+1"}
            assert: [{type: equals, value: "2"}]
        """);
    assertThat(read(f)).singleElement().satisfies(c -> assertThat(json(c).get("target").asText()).isEqualTo("2"));
    Path none = file("none.yaml", "prompts: [x]\n");
    assertThatThrownBy(() -> read(none)).hasMessageContaining("the object has no \"tests\"");
  }

  @Test
  void promptfooCsvColumnsAreVarsAndItsReservedColumnsAssertDescribeAndTag() throws Exception {
    Path f = file("tests.csv", "question,__expected,__expected2,__description,__metadata:subject\n"
        + "2+3,5,not-contains:6,adds,maths\n"
        + "capital of France,icontains:paris,,,geography\n");
    assertThat(formatOf(f, ReadOptions.DEFAULT)).isEqualTo("promptfoo (csv)");
    List<CaseRecord> cases = read(f);
    JsonNode a = json(cases.get(0));
    assertThat(a.get("question").asText()).isEqualTo("2+3");
    assertThat(a.get("vars").get("question").asText()).isEqualTo("2+3");
    assertThat(a.get("target").asText()).isEqualTo("5");
    assertThat(a.get("assert").toString()).isEqualTo("[{\"type\":\"equals\",\"value\":\"5\"},{\"type\":\"not-contains\",\"value\":\"6\"}]");
    assertThat(a.get("metadata").toString()).isEqualTo("{\"subject\":\"maths\",\"description\":\"adds\"}");
    JsonNode b = json(cases.get(1));
    assertThat(b.has("target")).isFalse();
    assertThat(b.get("assert").get(0).get("type").asText()).isEqualTo("icontains");
  }

  @Test
  void aPromptfooJsonTestFileIsDetectedFromItsFirstTest() throws Exception {
    Path f = file("tests.json", "[{\"vars\": {\"question\": \"2*4\"}, \"assert\": [{\"type\": \"equals\", \"value\": 8}]}]");
    assertThat(formatOf(f, ReadOptions.DEFAULT)).isEqualTo("promptfoo (json)");
    JsonNode c = json(read(f).get(0));
    assertThat(c.get("question").asText()).isEqualTo("2*4");
    assertThat(c.get("target").asText()).as("a number assertion value is its text").isEqualTo("8");
  }

  @Test
  void promptfooCellAssertionsReadAsPromptfooWritesThem() {
    assertThat(CaseShapes.assertionOfCell("Paris").toString()).isEqualTo("{\"type\":\"equals\",\"value\":\"Paris\"}");
    assertThat(CaseShapes.assertionOfCell("similar(0.8):hello").toString())
        .isEqualTo("{\"type\":\"similar\",\"value\":\"hello\",\"threshold\":0.8}");
    assertThat(CaseShapes.assertionOfCell("grade:is polite").toString()).isEqualTo("{\"type\":\"llm-rubric\",\"value\":\"is polite\"}");
    assertThat(CaseShapes.assertionOfCell("fn:output.length < 9").toString())
        .isEqualTo("{\"type\":\"javascript\",\"value\":\"output.length < 9\"}");
    assertThat(CaseShapes.assertionOfCell("is-json").toString()).isEqualTo("{\"type\":\"is-json\"}");
    assertThat(CaseShapes.assertionOfCell("contains").toString()).as("a bare type word is an answer")
        .isEqualTo("{\"type\":\"equals\",\"value\":\"contains\"}");
  }

  @Test
  void aPromptfooVarNamedLikeATestFieldIsRefused() throws Exception {
    Path f = file("tests.yaml", "- vars: {assert: 1}\n  assert: []\n");
    assertThatThrownBy(() -> read(f)).hasMessage(f + " line 1: field \"vars.assert\": a var may not have the name of a field of the test (\"assert\")");
  }

  // Detection and forcing

  @Test
  void aRecordWithTwoShapesMarksIsAmbiguousAndForcingSettlesIt() throws Exception {
    Path f = file("both.jsonl", "{\"input\": \"1+1\", \"ideal\": \"2\", \"target\": \"2\"}\n");
    assertThatThrownBy(() -> read(f)).hasMessage(f + " line 1: the format is ambiguous: the first record looks like"
        + " openai-evals and like inspect; choose one with --format openai-evals or --format inspect");
    assertThat(formatOf(f, format("inspect"))).isEqualTo("inspect (jsonl)");
    assertThat(json(read(f, format("inspect")).get(0)).get("ideal").asText()).isEqualTo("2");
    assertThat(json(read(f, format("jsonl")).get(0)).has("ideal")).isTrue();
  }

  @Test
  void theExtensionGivesTheSyntaxAndForcingAShapeKeepsIt() throws Exception {
    Path plain = file("plain.jsonl", "{\"id\": \"a\", \"prompt\": \"x\"}\n");
    assertThat(formatOf(plain, ReadOptions.DEFAULT)).isEqualTo("jsonl");
    Path odd = file("cases.txt", "{\"id\": \"a\"}\n");
    assertThatThrownBy(() -> read(odd)).hasMessageStartingWith(odd + ": cannot tell the format from the file's name");
    assertThat(read(odd, format("jsonl"))).hasSize(1);
    assertThat(formatOf(odd, format("openai-evals"))).isEqualTo("openai-evals (jsonl)");
    Path yamlText = file("tests.txt", "- vars: {q: 1}\n");
    assertThat(formatOf(yamlText, format("promptfoo"))).isEqualTo("promptfoo (yaml)");
    assertThatThrownBy(() -> read(plain, format("xml"))).hasMessage(plain
        + ": unknown format \"xml\"; the formats are jsonl, json, csv, yaml, openai-evals, inspect, promptfoo");
    assertThatThrownBy(() -> read(plain, new ReadOptions(null, CsvTypes.parse("a:int"), null, null, 0, null)))
        .hasMessageContaining("--csv-types is for CSV files");
  }

  // Ids

  @Test
  void madeIdsDependOnContentNotPositionAndRepeatsAreNumberedInOrder() throws Exception {
    List<String> lines = IntStream.range(0, 50).mapToObj(i -> "{\"q\": " + i + ", \"t\": \"" + (i * 7) + "\"}")
        .collect(Collectors.toCollection(ArrayList::new));
    Map<String, String> idOfContent = idsByContent(file("a.jsonl", String.join("\n", lines)));
    Collections.shuffle(lines, new Random(42));
    assertThat(idsByContent(file("b.jsonl", String.join("\n", lines)))).isEqualTo(idOfContent);
    // the same content with its fields in another order is the same case
    assertThat(read(file("c.jsonl", "{\"t\": \"0\", \"q\": 0}")).get(0).caseId()).isEqualTo(idOfContent.get("{\"q\":0,\"t\":\"0\"}"));

    List<CaseRecord> repeats = read(file("r.jsonl", "{\"q\":1}\n{\"q\":2}\n{\"q\":1}\n{\"q\":1}\n"));
    String one = repeats.get(0).caseId();
    assertThat(repeats).extracting(CaseRecord::caseId).containsExactly(one, repeats.get(1).caseId(), one + "~2", one + "~3");
  }

  private static Map<String, String> idsByContent(Path f) throws Exception {
    return read(f).stream().collect(Collectors.toMap(c -> {
      try {
        var n = (com.fasterxml.jackson.databind.node.ObjectNode) json(c);
        n.remove("id");
        return CaseIds.canonical(n);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }, CaseRecord::caseId));
  }

  @Test
  void aMadeIdIsCPlusTwelveHexOfTheSha256OfTheCanonicalJson() throws Exception {
    String canonical = "{\"a\":[{\"x\":1,\"y\":2}],\"b\":\"z\"}";
    var sha = java.security.MessageDigest.getInstance("SHA-256").digest(canonical.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    String expected = "c-" + java.util.HexFormat.of().formatHex(sha).substring(0, 12);
    var node = (com.fasterxml.jackson.databind.node.ObjectNode) JSON.readTree("{\"b\":\"z\",\"a\":[{\"y\":2,\"x\":1}]}");
    assertThat(CaseIds.canonical(node)).isEqualTo(canonical);
    assertThat(CaseIds.digestId(node)).isEqualTo(expected);
  }

  // Selection

  @Test
  void limitTakesTheFirstCases() throws Exception {
    Path f = file("cases.jsonl", "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n");
    assertThat(read(f, new ReadOptions(null, CsvTypes.NONE, 2, null, 0, null))).extracting(CaseRecord::caseId).containsExactly("a", "b");
  }

  @Test
  void aSampleIsReproducibleInDatasetOrderAndIndependentOfTheFilesOrder() throws Exception {
    List<String> lines = IntStream.range(0, 200).mapToObj(i -> "{\"id\": \"case-" + i + "\"}")
        .collect(Collectors.toCollection(ArrayList::new));
    Path f = file("a.jsonl", String.join("\n", lines));
    ReadOptions seven = new ReadOptions(null, CsvTypes.NONE, null, 20, 7, null);
    List<String> sample = ids(read(f, seven));
    assertThat(sample).hasSize(20).doesNotHaveDuplicates();
    assertThat(ids(read(f, seven))).isEqualTo(sample);
    assertThat(sample).isSortedAccordingTo((x, y) -> Integer.compare(lines.indexOf("{\"id\": \"" + x + "\"}"), lines.indexOf("{\"id\": \"" + y + "\"}")));
    // exactly the 20 smallest ranks, computed here from the definition
    List<String> smallest = IntStream.range(0, 200).mapToObj(i -> "case-" + i)
        .sorted((x, y) -> Long.compareUnsigned(CaseIds.sampleRank(7, x), CaseIds.sampleRank(7, y))).limit(20).sorted().toList();
    assertThat(sample.stream().sorted().toList()).isEqualTo(smallest);
    Collections.shuffle(lines, new Random(1));
    assertThat(ids(read(file("b.jsonl", String.join("\n", lines)), seven))).containsExactlyInAnyOrderElementsOf(sample);
    assertThat(ids(read(f, new ReadOptions(null, CsvTypes.NONE, null, 20, 8, null)))).isNotEqualTo(sample);
    assertThat(ids(read(f, new ReadOptions(null, CsvTypes.NONE, null, 500, 7, null)))).hasSize(200);
  }

  @Test
  void epochsMakeEachCaseKJobsWithEpochAndSampleId() throws Exception {
    Path f = file("cases.csv", "id,q\na,1\nb,2\n");
    List<CaseRecord> jobs = read(f, new ReadOptions(null, CsvTypes.NONE, null, null, 0, 3));
    assertThat(ids(jobs)).containsExactly("a#1", "a#2", "a#3", "b#1", "b#2", "b#3");
    JsonNode second = json(jobs.get(1));
    assertThat(second.get("epoch").asInt()).isEqualTo(2);
    assertThat(second.get("sampleId").asText()).isEqualTo("a");
    assertThat(second.get("q").asText()).isEqualTo("1");
    try (DatasetReader reader = DatasetReader.open(f, new ReadOptions(null, CsvTypes.NONE, null, null, 0, 3))) {
      for (int i = 0; i < 6; i++) {
        reader.next();
      }
      assertThat(reader.lineOf(5)).isEqualTo(3);
    }
    Path taken = file("taken.jsonl", "{\"id\":\"a\"}\n{\"id\":\"b\",\"epoch\":1}\n");
    assertThatThrownBy(() -> read(taken, new ReadOptions(null, CsvTypes.NONE, null, null, 0, 2)))
        .hasMessageStartingWith(taken + " line 2: field \"epoch\": the case already has it, and --epochs sets it");
    assertThat(read(taken)).hasSize(2);
  }

  @Test
  void optionsOutOfRangeAreRefusedNamingTheOption() {
    assertThatThrownBy(() -> new ReadOptions(null, CsvTypes.NONE, 0, null, 0, null)).hasMessage("--limit must be at least 1, got 0");
    assertThatThrownBy(() -> new ReadOptions(null, CsvTypes.NONE, null, 0, 0, null)).hasMessage("--sample must be at least 1, got 0");
    assertThatThrownBy(() -> new ReadOptions(null, CsvTypes.NONE, null, null, 0, ReadOptions.MAX_EPOCHS + 1))
        .hasMessage("--epochs must be from 1 to 1000, got 1001");
    assertThatThrownBy(() -> new ReadOptions(null, CsvTypes.NONE, 5, 5, 0, null)).hasMessageContaining("--limit and --sample");
  }

  private static List<String> ids(List<CaseRecord> cases) {
    return cases.stream().map(CaseRecord::caseId).toList();
  }
}
