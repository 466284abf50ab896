package dev.tally.coordinator.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.stats.GroupedEstimates;
import java.io.IOException;
import java.util.Map;
import java.util.function.Function;

/**
 * A run's figures by group ({@code tally run --group-by FIELD}): its results lines, each case's group by
 * {@link GroupedEstimates#groupOf} (the one rule: {@code metadata.FIELD}, then {@code FIELD}), and per group
 * accuracy and mean score from {@link GroupedEstimates}; written into the summary as {@code groups}:
 * {@code {"by": FIELD, "truncated": bool, "values": [{"value", "n", "accuracy", "meanScore"}, ...]}},
 * which the HTML report shows. A case is judged as in the summary: pass, fail and error (out of attempts
 * included) are; a cancelled case is not.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class ReportGroups {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ReportGroups() {}

  /**
   * The groups of a run's cases as the summary's {@code groups} object.
   *
   * @param lines the run's results lines
   * @param caseOf each case's JSON object by id (null for a case not known: its group is {@link
   *     GroupedEstimates#MISSING})
   * @param field the field to group by
   * @throws IOException if the lines cannot be read
   * @throws dev.tally.core.store.StoreException if the lines come from a store that fails
   */
  public static ObjectNode of(ResultLines lines, Function<String, JsonNode> caseOf, String field) throws IOException {
    GroupedEstimates grouped = new GroupedEstimates();
    lines.forEach(line -> {
      JsonNode c = caseOf.apply(line.path("id").asText());
      String group = c == null ? GroupedEstimates.MISSING : GroupedEstimates.groupOf(c, field);
      String verdict = line.path("verdict").asText();
      Boolean passed = verdict.equals(dev.tally.core.store.JobView.CANCELLED) ? null : verdict.equals("pass");
      JsonNode score = line.get("score");
      grouped.add(group, passed, score != null && score.isNumber() ? score.doubleValue() : null);
    });
    ObjectNode groups = JSON.createObjectNode();
    groups.put("by", field);
    groups.put("truncated", grouped.truncated());
    ArrayNode values = groups.putArray("values");
    for (Map.Entry<String, GroupedEstimates.Group> g : grouped.groups().entrySet()) {
      ObjectNode v = values.addObject();
      v.put("value", g.getKey());
      v.put("n", g.getValue().cases());
      v.set("accuracy", JSON.valueToTree(dev.tally.core.stats.EstimateText.Written.percent(g.getValue().accuracy().orElse(null))));
      v.set("meanScore", JSON.valueToTree(dev.tally.core.stats.EstimateText.Written.mean(g.getValue().meanScore().orElse(null))));
    }
    return groups;
  }
}
