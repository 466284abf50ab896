package dev.tally.coordinator.report;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.stats.EstimateText;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A run's report as one self-contained HTML file ({@code tally run --html}): the summary (the counts, and
 * accuracy and mean score with their 95% intervals as {@link EstimateText} writes them), the metrics by
 * group when the summary has them, and every case (id, verdict, score, attempts, worker, time, input,
 * output; a click shows the whole input, output, failure and history). Its CSS and script are inline and
 * it loads nothing, so it opens offline and can be mailed or archived as one file.
 *
 * <p>Made for big runs: the cases are written as one JSON array into the page, streamed line by line
 * from the results, and the page's script shows them a page of {@value #PAGE_SIZE} rows at a time,
 * filtered by verdict or by text, so a 100k-case report opens as quickly as a small one (the browser
 * parses the array once; nothing renders 100k rows). Inside the page the JSON has {@code <}, {@code >}
 * and {@code &} escaped as {@code \\u003c}-style escapes, so no case text can end the script element.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class HtmlReport {
  /**
   * Rows per page of the case table, handed to the page's script: a screenful to scan, and few enough that a
   * page renders in milliseconds whatever the run's size.
   */
  static final int PAGE_SIZE = 100;

  private static final String CSS = resource("report.css");
  private static final String SCRIPT = resource("report.js");

  /** The case JSON inside the page: {@code <}, {@code >}, {@code &} escaped, so {@code </script>} cannot occur. */
  private static final ObjectMapper SCRIPT_JSON = new ObjectMapper()
      .disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET)
      .disable(com.fasterxml.jackson.databind.SerializationFeature.FLUSH_AFTER_WRITE_VALUE);

  static {
    SCRIPT_JSON.getFactory().setCharacterEscapes(new ScriptEscapes());
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private HtmlReport() {}

  /** The input of each case to show beside its results, by case id; null when it is not known. */
  @FunctionalInterface
  public interface Inputs {
    /** No inputs: the report's input column stays empty (a report made from results alone). */
    Inputs NONE = caseId -> null;

    /** The case's input as text, or null. */
    String of(String caseId);
  }

  /**
   * A case's input as a person reads it: its {@code input} field (a string as it is; a list of chat
   * messages as {@code role: content} lines; anything else as JSON), else the whole case but its id.
   *
   * @param caseJson the case's JSON object (as stored)
   * @throws IllegalArgumentException if {@code caseJson} is not JSON
   */
  public static String inputText(String caseJson) {
    JsonNode node;
    try {
      node = JSON.readTree(caseJson);
    } catch (IOException e) {
      throw new IllegalArgumentException("a case is not JSON: " + e.getMessage(), e);
    }
    JsonNode input = node.get("input");
    if (input == null) {
      if (node.isObject()) {
        ((ObjectNode) node).remove("id");
      }
      return node.toString();
    }
    if (input.isTextual()) {
      return input.asText();
    }
    if (input.isArray() && input.size() > 0 && isMessages(input)) {
      StringBuilder text = new StringBuilder();
      for (JsonNode m : input) {
        if (text.length() > 0) {
          text.append('\n');
        }
        JsonNode content = m.get("content");
        text.append(m.get("role").asText()).append(": ").append(content.isTextual() ? content.asText() : content.toString());
      }
      return text.toString();
    }
    return input.toString();
  }

  private static boolean isMessages(JsonNode list) {
    for (JsonNode m : list) {
      if (!m.isObject() || !m.path("role").isTextual() || !m.has("content")) {
        return false;
      }
    }
    return true;
  }

  /**
   * Writes the report to {@code out}, atomically ({@link AtomicFile}).
   *
   * @param summary the run's summary, as {@link RunReport#summaryBytes} makes it (a {@code groups} object,
   *     when present, is shown as the metrics by group: {@code by}, and {@code values}, each with {@code
   *     value}, {@code n}, {@code accuracy} and {@code meanScore})
   * @param lines the run's results lines
   * @param inputs each case's input, or {@link Inputs#NONE}
   * @throws IOException if the lines cannot be read or the file cannot be written
   * @throws dev.tally.core.store.StoreException if the lines come from a store that fails
   */
  public static void write(JsonNode summary, ResultLines lines, Inputs inputs, Path out) throws IOException {
    AtomicFile.write(out, temp -> {
      try (Writer w = Files.newBufferedWriter(temp, StandardCharsets.UTF_8)) {
        long runId = summary.path("runId").asLong();
        w.write("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            + "<title>Tally run " + runId + "</title>\n<style>\n" + CSS + "</style>\n</head>\n<body>\n");
        w.write("<header><h1>Tally run " + runId + "</h1><p class=\"sub\">" + count(summary, "total", "case")
            + "; report of the results as stored</p></header>\n");
        summarySection(w, summary);
        groupsSection(w, summary.get("groups"));
        w.write("<section id=\"cases\"><h2>Cases</h2>\n<div class=\"controls\">"
            + "<label>Verdict <select id=\"verdict-filter\"><option value=\"\">all</option><option>pass</option>"
            + "<option>fail</option><option>error</option><option>cancelled</option></select></label>"
            + "<input id=\"search\" type=\"search\" placeholder=\"Search id, input, output\" size=\"32\">"
            + "<button id=\"prev-page\" type=\"button\">Previous</button><button id=\"next-page\" type=\"button\">Next</button>"
            + "<span id=\"page-info\"></span></div>\n"
            + "<table id=\"case-table\" data-page-size=\"" + PAGE_SIZE + "\"><thead><tr><th>id</th><th>verdict</th><th class=\"num\">score</th>"
            + "<th class=\"num\">attempts</th><th>worker</th><th class=\"num\">ms</th><th>input</th><th>output</th></tr></thead>"
            + "<tbody></tbody></table>\n<noscript>The case table needs JavaScript; the summary above does not.</noscript>\n"
            + "</section>\n<script id=\"case-data\" type=\"application/json\">[");
        boolean[] first = {true};
        lines.forEach(line -> {
          ObjectNode c = line.deepCopy();
          String input = inputs.of(line.path("id").asText());
          if (input != null) {
            c.put("input", input);
          }
          if (!first[0]) {
            w.write(",\n");
          }
          first[0] = false;
          SCRIPT_JSON.writeValue(w, c);
        });
        w.write("]</script>\n<script>\n" + SCRIPT + "</script>\n</body>\n</html>\n");
      }
    });
  }

  private static void summarySection(Writer w, JsonNode summary) throws IOException {
    w.write("<section id=\"summary\"><h2>Summary</h2>\n<dl class=\"figures\">");
    w.write("<div><dt>Accuracy (passed / judged)</dt><dd id=\"accuracy\">"
        + escape(EstimateText.Written.textOf(summary.get("accuracy"))) + "</dd></div>");
    w.write("<div><dt>Mean score</dt><dd id=\"mean-score\">"
        + escape(EstimateText.Written.textOf(summary.get("meanScore"))) + "</dd></div>");
    // The counts as tally run's table and the dashboard list them: the summary's rows (RunReport.countRows).
    w.write("</dl>\n<table class=\"counts\"><tr>");
    for (JsonNode row : summary.path("rows")) {
      w.write("<th class=\"num\">" + escape(row.path("label").asText().strip()) + "</th>");
    }
    w.write("</tr><tr>");
    for (JsonNode row : summary.path("rows")) {
      w.write("<td class=\"num\" id=\"count-" + escape(row.path("label").asText().strip().replace(' ', '-')) + "\">"
          + escape(row.path("count").asText("-")) + "</td>");
    }
    w.write("</tr></table></section>\n");
  }

  private static void groupsSection(Writer w, JsonNode groups) throws IOException {
    if (groups == null || !groups.path("values").isArray()) {
      return;
    }
    w.write("<section id=\"groups\"><h2>By " + escape(groups.path("by").asText("group")) + "</h2>\n<table>"
        + "<thead><tr><th>" + escape(groups.path("by").asText("group")) + "</th><th class=\"num\">n</th>"
        + "<th>accuracy</th><th>mean score</th></tr></thead><tbody>");
    if (groups.path("truncated").asBoolean()) {
      w.write("<tr><td colspan=\"4\">More groups than " + dev.tally.core.stats.GroupedEstimates.MAX_GROUPS
          + ": the rest are counted as " + escape(dev.tally.core.stats.GroupedEstimates.OTHER) + ".</td></tr>");
    }
    for (JsonNode g : groups.get("values")) {
      w.write("<tr><td>" + escape(g.path("value").asText()) + "</td><td class=\"num\">" + g.path("n").asLong() + "</td><td>"
          + escape(EstimateText.Written.textOf(g.get("accuracy"))) + "</td><td>"
          + escape(EstimateText.Written.textOf(g.get("meanScore"))) + "</td></tr>");
    }
    w.write("</tbody></table></section>\n");
  }

  private static String count(JsonNode summary, String field, String noun) {
    long n = summary.path(field).asLong();
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  /** {@code text} safe as HTML text or a quoted attribute's value. */
  static String escape(String text) {
    StringBuilder out = new StringBuilder(text.length() + 16);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '&' -> out.append("&amp;");
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        default -> out.append(c);
      }
    }
    return out.toString();
  }

  private static String resource(String name) {
    try (InputStream in = HtmlReport.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("the HTML report's " + name + " is missing from the jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** JSON's standard escapes, plus {@code <}, {@code >} and {@code &} as {@code \\uXXXX}. */
  private static final class ScriptEscapes extends CharacterEscapes {
    private final int[] escapes;

    ScriptEscapes() {
      escapes = standardAsciiEscapesForJSON();
      escapes['<'] = ESCAPE_STANDARD;
      escapes['>'] = ESCAPE_STANDARD;
      escapes['&'] = ESCAPE_STANDARD;
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return escapes;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      return null;
    }
  }
}
