package dev.tally.coordinator.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.cases.Epochs;
import dev.tally.core.stats.Estimates;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * pass@k of a run whose cases are epochs ({@code --epochs K}, {@link Epochs}): its results lines grouped by
 * each case's {@value Epochs#SAMPLE_ID_FIELD}, each sample's attempts (its judged epochs: pass, fail, error;
 * a cancelled epoch is not judged) and passes, and {@link Estimates#passAtK(List, int)} for k = 1 and k = K
 * (the most epochs any sample has), over the samples with at least k judged epochs. Written into the
 * summary as {@code passAtK}: {@code {"epochs": K, "samples": N, "values": [{"k": 1, "estimate": {...},
 * "samples": n}, ...]}}.
 *
 * <p>Holds one counter pair per sample in memory. Thread-safety: stateless; safe from any thread.
 */
public final class ReportPassAtK {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ReportPassAtK() {}

  /**
   * The run's pass@k, or empty if none of its cases is an epoch (no {@value Epochs#SAMPLE_ID_FIELD}).
   *
   * @param lines the run's results lines
   * @param caseOf each case's JSON object by id (null for a case not known: it is left out)
   * @throws IOException if the lines cannot be read
   * @throws dev.tally.core.store.StoreException if the lines come from a store that fails
   */
  public static Optional<ObjectNode> of(ResultLines lines, Function<String, JsonNode> caseOf) throws IOException {
    Map<String, int[]> samples = new LinkedHashMap<>(); // sample id -> {judged epochs, passed}
    lines.forEach(line -> {
      JsonNode c = caseOf.apply(line.path("id").asText());
      JsonNode sample = c == null ? null : c.get(Epochs.SAMPLE_ID_FIELD);
      String verdict = line.path("verdict").asText();
      if (sample == null || !sample.isTextual() || verdict.equals(dev.tally.core.store.JobView.CANCELLED)) {
        return;
      }
      int[] counts = samples.computeIfAbsent(sample.textValue(), k -> new int[2]);
      counts[0]++;
      if (verdict.equals("pass")) {
        counts[1]++;
      }
    });
    if (samples.isEmpty()) {
      return Optional.empty();
    }
    int epochs = samples.values().stream().mapToInt(c -> c[0]).max().orElse(0);
    ObjectNode out = JSON.createObjectNode();
    out.put("epochs", epochs);
    out.put("samples", samples.size());
    ArrayNode values = out.putArray("values");
    for (int k : new TreeSet<>(List.of(1, epochs))) {
      if (k < 1) {
        continue;
      }
      List<Estimates.Attempts> cases = new ArrayList<>();
      for (int[] c : samples.values()) {
        if (c[0] >= k) {
          cases.add(new Estimates.Attempts(c[0], c[1]));
        }
      }
      ObjectNode v = values.addObject();
      v.put("k", k);
      v.put("samples", cases.size());
      v.set("estimate", JSON.valueToTree(dev.tally.core.stats.EstimateText.Written.passAtK(Estimates.passAtK(cases, k).orElse(null))));
    }
    return Optional.of(out);
  }
}
