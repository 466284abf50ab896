package dev.tally.cli.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.JobView;
import dev.tally.core.store.Store;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a chaos run checks beyond the store's invariants (those are {@link dev.tally.simulation.Checker}'s):
 * that the results file {@code tally run} wrote for a run says what the store says, with exactly one line
 * per case, in dataset order, with the store's verdict.
 *
 * <p>Thread-safety: stateless.
 */
final class ResultsFileCheck {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ResultsFileCheck() {}

  /**
   * The ways {@code resultsFile} differs from run {@code runId} in {@code store}.
   *
   * @param caseIds the dataset's case ids, in dataset order
   * @return one sentence per difference, empty if none
   */
  static List<String> check(Store store, long runId, List<String> caseIds, Path resultsFile) {
    List<String> v = new ArrayList<>();
    String p = "results of run " + runId + ": ";
    List<String> lines;
    try {
      lines = Files.readAllLines(resultsFile, StandardCharsets.UTF_8);
    } catch (IOException e) {
      v.add(p + "cannot read its results file " + resultsFile + ": " + e);
      return v;
    }
    if (lines.size() != caseIds.size()) {
      v.add(p + "results file " + resultsFile.getFileName() + " has " + lines.size() + " lines for " + caseIds.size() + " cases");
    }
    Map<String, String> verdictOf = new HashMap<>();
    for (JobView j : store.jobs(runId)) {
      verdictOf.put(j.caseId(), j.reportedVerdict());
    }
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < lines.size(); i++) {
      JsonNode row;
      try {
        row = JSON.readTree(lines.get(i));
      } catch (IOException e) {
        v.add(p + "results line " + (i + 1) + " is not JSON: " + e.getMessage());
        continue;
      }
      String id = row.path("id").asText(null);
      if (id == null || !seen.add(id)) {
        v.add(p + "results line " + (i + 1) + ": id " + id + (id == null ? " missing" : " appears again"));
        continue;
      }
      if (i < caseIds.size() && !id.equals(caseIds.get(i))) {
        v.add(p + "results line " + (i + 1) + " is " + id + ", expected " + caseIds.get(i) + " (dataset order)");
      }
      String expected = verdictOf.get(id);
      String verdict = row.path("verdict").asText(null);
      if (expected == null) {
        v.add(p + "results line " + (i + 1) + ": " + id + " is not a case of the run");
      } else if (!expected.equals(verdict)) {
        v.add(p + "results line " + (i + 1) + ": " + id + " has verdict " + verdict + ", the store says " + expected);
      }
    }
    return v;
  }
}
