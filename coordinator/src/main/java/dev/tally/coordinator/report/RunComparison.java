package dev.tally.coordinator.report;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.stats.Estimate;
import dev.tally.core.stats.Estimates;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Two runs compared case by case ({@code tally compare RUN_A RUN_B}), matched by case id: the cases whose
 * verdict changed, each run's accuracy, and B's accuracy minus A's over the cases both judged with its
 * interval and whether it is beyond the noise ({@link Estimates#pairedDifference}, the one owner of that
 * arithmetic).
 *
 * <p>A case is judged when its verdict is {@code pass}, {@code fail} or {@code error} (out of attempts is
 * {@code error} in the results); a cancelled case is not, as in the summary's accuracy. Each run's
 * accuracy is over all its judged cases; the paired difference is over the cases judged in both, where
 * {@code fail} and {@code error} both count as "did not pass".
 *
 * <p>Thread-safety: an immutable value; {@link #of} reads each source once on the calling thread.
 *
 * @param accuracyA run A's accuracy over its judged cases, or null when it judged none
 * @param accuracyB run B's accuracy over its judged cases, or null when it judged none
 * @param paired B's accuracy minus A's over the cases both judged, or null when there is none
 * @param changes the cases in both runs whose verdicts differ, in B's order
 * @param common cases (ids) in both runs
 * @param onlyInA cases only run A has
 * @param onlyInB cases only run B has
 */
public record RunComparison(
    Estimate accuracyA, Estimate accuracyB, Estimates.PairedDifference paired, List<Change> changes, long common, long onlyInA, long onlyInB) {

  /** Which way a case's verdict moved from A to B. */
  public enum Direction {
    /** It passed in A and not in B (fail or error). */
    PASS_TO_NOT_PASS,
    /** It did not pass in A (fail or error) and passed in B. */
    NOT_PASS_TO_PASS,
    /** Any other change: fail to error and back, or to or from cancelled. */
    OTHER
  }

  /**
   * One case whose verdict changed.
   *
   * @param id the case's id
   * @param before its verdict in run A
   * @param after its verdict in run B
   * @param direction which way it moved
   */
  public record Change(String id, String before, String after, Direction direction) {}

  /** How many changes went {@code direction}. */
  public long count(Direction direction) {
    return changes.stream().filter(c -> c.direction() == direction).count();
  }

  /**
   * Compares run A's results lines with run B's.
   *
   * @throws IOException if a source cannot be read, or has a case id twice (naming the id)
   * @throws dev.tally.core.store.StoreException if a source is a store that fails
   */
  public static RunComparison of(ResultLines a, ResultLines b) throws IOException {
    Map<String, String> before = new HashMap<>();
    long[] judgedA = new long[2]; // passed, judged
    a.forEach(line -> {
      String id = line.path("id").asText();
      String verdict = verdict(line);
      if (before.put(id, verdict) != null) {
        throw new IOException("run A has the case " + dev.tally.core.cases.CaseLines.quotedId(id) + " twice");
      }
      tally(judgedA, verdict);
    });
    Map<String, Boolean> seenInB = new HashMap<>();
    long[] judgedB = new long[2];
    long[] table = new long[4]; // both pass, only A, only B, neither
    long[] common = new long[1];
    List<Change> changes = new ArrayList<>();
    b.forEach(line -> {
      String id = line.path("id").asText();
      String after = verdict(line);
      if (seenInB.put(id, Boolean.TRUE) != null) {
        throw new IOException("run B has the case " + dev.tally.core.cases.CaseLines.quotedId(id) + " twice");
      }
      tally(judgedB, after);
      String was = before.get(id);
      if (was == null) {
        return;
      }
      common[0]++;
      if (judged(was) && judged(after)) {
        boolean passA = was.equals("pass");
        boolean passB = after.equals("pass");
        table[passA ? (passB ? 0 : 1) : (passB ? 2 : 3)]++;
      }
      if (!was.equals(after)) {
        changes.add(new Change(id, was, after, direction(was, after)));
      }
    });
    long onlyInA = before.size() - common[0];
    long onlyInB = seenInB.size() - common[0];
    return new RunComparison(
        Estimates.proportion(judgedA[0], judgedA[1]).orElse(null),
        Estimates.proportion(judgedB[0], judgedB[1]).orElse(null),
        Estimates.pairedDifference(table[0], table[1], table[2], table[3]).orElse(null),
        List.copyOf(changes), common[0], onlyInA, onlyInB);
  }

  private static String verdict(JsonNode line) {
    return line.path("verdict").asText("error");
  }

  private static boolean judged(String verdict) {
    return verdict.equals("pass") || verdict.equals("fail") || verdict.equals("error");
  }

  private static void tally(long[] passedJudged, String verdict) {
    if (judged(verdict)) {
      passedJudged[1]++;
      if (verdict.equals("pass")) {
        passedJudged[0]++;
      }
    }
  }

  private static Direction direction(String before, String after) {
    if (before.equals("pass") && judged(after)) {
      return Direction.PASS_TO_NOT_PASS;
    }
    if (after.equals("pass") && judged(before)) {
      return Direction.NOT_PASS_TO_PASS;
    }
    return Direction.OTHER;
  }

  /** {@link #paired} as an Optional. */
  public Optional<Estimates.PairedDifference> difference() {
    return Optional.ofNullable(paired);
  }
}
