package dev.tally.core.cases;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.CaseRecord;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The case grammar, read as a stream: what is a case, what is refused, and where the message says it is. */
class CaseLinesTest {

  private static CaseLines reader(String text) {
    return CaseLines.of(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "request body");
  }

  private static List<CaseRecord> all(CaseLines lines) throws CaseSourceException {
    List<CaseRecord> out = new ArrayList<>();
    for (CaseRecord c; (c = lines.next()) != null; ) {
      out.add(c);
    }
    return out;
  }

  @Test
  void readsCasesInOrderSkippingBlankLinesAndKnowsEachCasesLine() throws Exception {
    CaseLines lines = reader("\uFEFF{\"id\":\"a\"}\r\n\n  \n{\"id\":\"b\",\"x\":1}\n{\"id\":\"c\"}");
    List<CaseRecord> cases = all(lines);
    assertThat(cases).extracting(CaseRecord::caseId).containsExactly("a", "b", "c");
    assertThat(cases).extracting(CaseRecord::position).containsExactly(0, 1, 2);
    assertThat(cases.get(0).caseJson()).isEqualTo("{\"id\":\"a\"}");
    assertThat(lines.lineOf(0)).isEqualTo(1);
    assertThat(lines.lineOf(1)).isEqualTo(4);
    assertThat(lines.lineOf(2)).isEqualTo(5);
    assertThat(lines.lineOf(3)).isZero();
    assertThat(lines.count()).isEqualTo(3);
  }

  @Test
  void aBadLineIsRefusedWithTheSourceAndItsLine() {
    assertThatThrownBy(() -> all(reader("{\"id\":\"a\"}\n\n[1]\n")))
        .isInstanceOf(CaseSourceException.class).hasMessage("request body line 3: expected a JSON object, got array")
        .satisfies(e -> assertThat(((CaseSourceException) e).line()).isEqualTo(3));
    assertThatThrownBy(() -> all(reader("{\"name\":\"x\"}"))).hasMessageContaining("line 1: case has no \"id\" field");
    assertThatThrownBy(() -> all(reader("{\"id\":7}"))).hasMessageContaining("\"id\" must be a non-empty string");
    assertThatThrownBy(() -> all(reader("{\"id\":\"a\",\"id\":\"b\"}"))).hasMessageContaining("Duplicate field 'id'");
    assertThatThrownBy(() -> all(reader("{\"id\":\"a\"} x"))).hasMessageContaining("not valid JSON");
    assertThatThrownBy(() -> all(reader("{\"id\":\"\\ud800\"}"))).hasMessageContaining("unpaired surrogate");
    assertThatThrownBy(() -> all(reader("{\"id\":\"a\\u0001\"}"))).hasMessageContaining("control character");
  }

  @Test
  void anIdOfExactlyTheLimitIsReadAndOneCharacterMoreIsRefused() throws Exception {
    String longest = "i".repeat(CaseLines.MAX_ID_CHARS);
    assertThat(all(reader("{\"id\":\"" + longest + "\"}"))).singleElement()
        .satisfies(c -> assertThat(c.caseId()).isEqualTo(longest));
    assertThatThrownBy(() -> all(reader("{\"id\":\"" + longest + "i\"}")))
        .hasMessageContaining("line 1: \"id\" is " + (CaseLines.MAX_ID_CHARS + 1) + " characters long");
  }

  @Test
  void aLineOfExactlyTheLimitIsReadAndOneByteMoreIsRefusedWithItsLine() throws Exception {
    String head = "{\"id\":\"a\",\"pad\":\"";
    String tail = "\"}";
    String exact = head + "x".repeat(CaseLines.MAX_LINE_BYTES - head.length() - tail.length()) + tail;
    assertThat(all(reader("\n" + exact + "\n"))).hasSize(1);
    String over = head + "x".repeat(CaseLines.MAX_LINE_BYTES + 1 - head.length() - tail.length()) + tail;
    assertThatThrownBy(() -> all(reader("\n" + over + "\n")))
        .hasMessage("request body line 2: line is longer than the limit of " + CaseLines.MAX_LINE_BYTES + " bytes");
  }

  @Test
  void bytesThatAreNotUtf8AreRefusedOnTheirOwnLine() {
    byte[] bytes = {'{', '"', 'i', 'd', '"', ':', '"', 'a', '"', '}', '\n', '{', '"', 'i', 'd', '"', ':', '"', (byte) 0xC3, '"', '}'};
    assertThatThrownBy(() -> all(CaseLines.of(new ByteArrayInputStream(bytes), "d.jsonl")))
        .hasMessage("d.jsonl line 2: not valid UTF-8");
  }

  @Test
  void aRepeatedIdIsRefusedOnlyWhenAskedAndNamesBothLines() throws Exception {
    String text = "{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n{\"id\":\"a\"}\n";
    assertThat(all(reader(text))).hasSize(3); // a stream leaves ids to the store's constraint
    assertThatThrownBy(() -> all(reader(text).rejectingDuplicateIds()))
        .hasMessage("request body line 4: duplicate id \"a\" (first on line 1)");
    // an id with quotes in it reads as one id: quoted as a JSON string, as every message quotes a case id
    String quoted = "{\"id\":\"say \\\"hi\\\" o'k \\\\\"}\n{\"id\":\"say \\\"hi\\\" o'k \\\\\"}\n";
    assertThatThrownBy(() -> all(reader(quoted).rejectingDuplicateIds()))
        .hasMessage("request body line 2: duplicate id \"say \\\"hi\\\" o'k \\\\\" (first on line 1)");
  }

  @Test
  void aCaseIdIsQuotedAsAJsonString() {
    assertThat(CaseLines.quotedId("a")).isEqualTo("\"a\"");
    assertThat(CaseLines.quotedId("a\"b'c\\d")).isEqualTo("\"a\\\"b'c\\\\d\"");
    assertThat(CaseLines.quotedId("caf\u00e9 \uD83D\uDE00")).isEqualTo("\"caf\u00e9 \uD83D\uDE00\""); // shown as it is
  }

  @Test
  void theHeaderIsTheFirstLineThatIsNotBlankAndTheCasesFollowIt() throws Exception {
    CaseLines lines = reader("\n{\"name\":\"nightly\"}\n{\"id\":\"a\"}\n");
    assertThat(lines.header()).hasValue(new CaseLines.Line(2, "{\"name\":\"nightly\"}"));
    List<CaseRecord> cases = all(lines);
    assertThat(cases).singleElement().satisfies(c -> assertThat(c.position()).isZero());
    assertThat(lines.lineOf(0)).isEqualTo(3);
    assertThat(reader("\n \n").header()).isEmpty();
    CaseLines started = reader("{\"id\":\"a\"}");
    started.next();
    assertThatThrownBy(started::header).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aStreamThatFailsIsReportedAsUnreadable() {
    InputStream broken = new InputStream() {
      @Override
      public int read() throws IOException {
        throw new IOException("connection reset");
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        throw new IOException("connection reset");
      }
    };
    assertThatThrownBy(() -> all(CaseLines.of(broken, "request body")))
        .hasMessage("request body: cannot read: connection reset");
  }

  @Test
  void aListSourceNamesTheCaseByItsNumber() {
    CaseSource list = CaseSource.of(List.of(new CaseRecord(0, "a", "{}"), new CaseRecord(1, "a", "{}")), "the cases");
    assertThat(CaseSourceException.duplicateId(list, 1, 0, "a"))
        .hasMessage("the cases: case 2: duplicate id \"a\" (first at case 1)");
  }

  @Test
  void nextObjectReadsLinesByEveryRuleButTheIdOne() throws Exception {
    CaseLines lines = reader("{\"q\": 1}\n\n{\"id\": 7}\n[1]\n");
    CaseLines.ObjectLine first = lines.nextObject().orElseThrow();
    assertThat(first.line()).isEqualTo(1);
    assertThat(first.text()).isEqualTo("{\"q\": 1}");
    assertThat(lines.nextObject().orElseThrow().line()).isEqualTo(3);
    assertThatThrownBy(lines::nextObject).hasMessage("request body line 4: expected a JSON object, got array");
  }

  @Test
  void idProblemIsTheIdRuleThatNextApplies() throws Exception {
    var nodes = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance;
    assertThat(CaseLines.idProblem(nodes.textNode("a"))).isEmpty();
    assertThat(CaseLines.idProblem(null)).contains("case has no \"id\" field");
    assertThat(CaseLines.idProblem(nodes.textNode(""))).contains("\"id\" must be a non-empty string, got \"\"");
    assertThat(CaseLines.idProblem(nodes.textNode("x".repeat(CaseLines.MAX_ID_CHARS + 1)))).get().asString()
        .contains("the limit is " + CaseLines.MAX_ID_CHARS);
    assertThat(CaseLines.idProblem(nodes.textNode("a\tb"))).get().asString().contains("control character");
    assertThat(CaseLines.idProblem(nodes.textNode("\ud800"))).get().asString().contains("unpaired surrogate");
  }

  @Test
  void idsThatLookLikeOtherIdsAreRefusedAndTheCharacterIsNamed() throws Exception {
    var nodes = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance;
    // C1 (CSI), a right-to-left override ("Trojan Source"), a zero-width space, a byte-order mark mid-id.
    assertThat(CaseLines.idProblem(nodes.textNode("a\u009bb"))).contains("\"id\" holds U+009B at character 2, a control character");
    assertThat(CaseLines.idProblem(nodes.textNode("ab\u202ecd"))).get().asString()
        .startsWith("\"id\" holds U+202E at character 3, an invisible format character");
    assertThat(CaseLines.idProblem(nodes.textNode("a\u200b"))).get().asString().contains("U+200B at character 2");
    assertThat(CaseLines.idProblem(nodes.textNode("a\u2028b"))).get().asString().contains("U+2028 at character 2, a line or paragraph separator");
    assertThat(CaseLines.idProblem(nodes.textNode("\ud83d\ude00x\ufeff"))).get().asString()
        .contains("U+FEFF at character 3"); // positions count characters, not UTF-16 units
    // What shows as itself stays valid: other scripts, emoji, spaces, punctuation.
    // The joiners inside a word of a script or an emoji sequence are writing (Persian "mi-khaham" with a
    // non-joiner, a family emoji with joiners); beside ASCII or at an end they are only a disguise.
    assertThat(CaseLines.idProblem(nodes.textNode("a\u200d"))).get().asString().contains("U+200D at character 2");
    assertThat(CaseLines.idProblem(nodes.textNode("ab\u200ccd"))).get().asString().contains("U+200C at character 3");
    assertThat(CaseLines.idProblem(nodes.textNode("\u200c\u0645\u06cc"))).get().asString().contains("U+200C at character 1");
    for (String id : List.of("caf\u00e9", "\u6e2c\u8a66-1", "\u0645\u0631\u062d\u0628\u0627", "\ud83d\ude00", "a b", "tests/x.py::t[1-2]",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67")) {
      assertThat(CaseLines.idProblem(nodes.textNode(id))).as(id).isEmpty();
    }
    // A dataset line with one is refused with its place.
    assertThatThrownBy(() -> all(reader("{\"id\":\"a\"}\n{\"id\":\"b\\u202e\"}")))
        .hasMessageContaining("line 2").hasMessageContaining("U+202E");
  }
}
