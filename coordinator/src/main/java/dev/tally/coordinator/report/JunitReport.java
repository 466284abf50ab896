package dev.tally.coordinator.report;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import javax.xml.stream.XMLOutputFactory;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamWriter;

/**
 * A run's results as JUnit XML ({@code tally run --junit}), the report CI systems (Jenkins, GitLab, GitHub
 * Actions' test reporters) read: one {@code <testsuite>} named after the run inside {@code <testsuites>},
 * and one {@code <testcase>} per case in dataset order, named by the case's id, with class name {@code
 * tally.run.N} and its time in seconds. A case that failed has a {@code <failure>}, one that ended {@code
 * error} (an error verdict, or out of attempts) an {@code <error>} carrying its failure reason, a cancelled
 * one {@code <skipped>}; every case's output tail is its {@code <system-out>} and its stderr tail (when the results line has one) its {@code <system-err>}. The suite's counts ({@code
 * tests}, {@code failures}, {@code errors}, {@code skipped}) come from the summary, their one owner.
 *
 * <p>Characters XML 1.0 cannot carry (control characters other than tab, line feed and carriage return,
 * such as a terminal's escape codes in an output tail) are written as U+FFFD, so the file always parses.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class JunitReport {
  private static final XMLOutputFactory XML = XMLOutputFactory.newFactory();

  private JunitReport() {}

  /**
   * Writes the report to {@code out}, atomically ({@link AtomicFile}).
   *
   * @param summary the run's summary, as {@link RunReport#summaryBytes} makes it ({@code runId}, {@code
   *     total}, {@code failed}, {@code errored}, {@code cancelled}, {@code runWallMillis})
   * @param lines the run's results lines
   * @throws IOException if the lines cannot be read or the file cannot be written
   * @throws dev.tally.core.store.StoreException if the lines come from a store that fails
   */
  public static void write(JsonNode summary, ResultLines lines, Path out) throws IOException {
    long runId = summary.path("runId").asLong();
    AtomicFile.write(out, temp -> {
      try (OutputStream file = Files.newOutputStream(temp)) {
        XMLStreamWriter xml = XML.createXMLStreamWriter(file, "UTF-8");
        xml.writeStartDocument("UTF-8", "1.0");
        xml.writeCharacters("\n");
        xml.writeStartElement("testsuites");
        xml.writeAttribute("name", "tally");
        counts(xml, summary);
        xml.writeCharacters("\n  ");
        xml.writeStartElement("testsuite");
        xml.writeAttribute("name", "tally run " + runId);
        counts(xml, summary);
        lines.forEach(line -> testCase(xml, runId, line));
        xml.writeCharacters("\n  ");
        xml.writeEndElement();
        xml.writeCharacters("\n");
        xml.writeEndElement();
        xml.writeCharacters("\n");
        xml.writeEndDocument();
        xml.close();
      } catch (XMLStreamException e) {
        throw new IOException("cannot write JUnit XML " + out + ": " + e.getMessage(), e);
      }
    });
  }

  private static void counts(XMLStreamWriter xml, JsonNode summary) throws XMLStreamException {
    xml.writeAttribute("tests", Long.toString(summary.path("total").asLong()));
    xml.writeAttribute("failures", Long.toString(summary.path("failed").asLong()));
    xml.writeAttribute("errors", Long.toString(summary.path("errored").asLong()));
    xml.writeAttribute("skipped", Long.toString(summary.path("cancelled").asLong()));
    xml.writeAttribute("time", seconds(summary.path("runWallMillis").asLong()));
  }

  private static void testCase(XMLStreamWriter xml, long runId, JsonNode line) throws IOException {
    try {
      xml.writeCharacters("\n    ");
      xml.writeStartElement("testcase");
      xml.writeAttribute("name", clean(line.path("id").asText()));
      xml.writeAttribute("classname", "tally.run." + runId);
      xml.writeAttribute("time", seconds(line.path("durationMillis").asLong(0)));
      String output = clean(line.path("output").asText(""));
      String verdict = line.path("verdict").asText();
      switch (verdict) {
        case "pass":
          break;
        case "fail":
          xml.writeStartElement("failure");
          xml.writeAttribute("type", "fail");
          xml.writeAttribute("message", "verdict fail" + (line.path("score").isNumber() ? ", score " + line.get("score").asText() : ""));
          xml.writeEndElement();
          break;
        case "cancelled":
          xml.writeEmptyElement("skipped");
          xml.writeAttribute("message", clean(line.path("failure").asText("cancelled")));
          break;
        default:
          xml.writeStartElement("error");
          xml.writeAttribute("type", verdict);
          xml.writeAttribute("message", clean(line.path("failure").asText("verdict " + verdict)));
          xml.writeEndElement();
          break;
      }
      if (!output.isEmpty()) {
        xml.writeStartElement("system-out");
        xml.writeCharacters(output);
        xml.writeEndElement();
      }
      String stderr = clean(line.path("stderr").asText(""));
      if (!stderr.isEmpty()) {
        xml.writeStartElement("system-err");
        xml.writeCharacters(stderr);
        xml.writeEndElement();
      }
      xml.writeEndElement();
    } catch (XMLStreamException e) {
      throw new IOException("cannot write the JUnit case " + line.path("id").asText() + ": " + e.getMessage(), e);
    }
  }

  private static String seconds(long millis) {
    return String.format(Locale.ROOT, "%.3f", millis / 1000.0);
  }

  /** {@code text} with every character XML 1.0 cannot carry replaced by U+FFFD. */
  static String clean(String text) {
    StringBuilder out = null;
    for (int i = 0; i < text.length(); ) {
      int c = text.codePointAt(i);
      boolean allowed = c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || c >= 0x10000;
      if (!allowed && out == null) {
        out = new StringBuilder(text.length()).append(text, 0, i);
      }
      if (out != null) {
        if (allowed) {
          out.appendCodePoint(c);
        } else {
          out.append('\uFFFD');
        }
      }
      i += Character.charCount(c);
    }
    return out == null ? text : out.toString();
  }
}
