package dev.tally.core;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * One case of a dataset, as submitted.
 *
 * @param position the case's 0-based place in the dataset; results are written in this order
 * @param caseId the case's unique {@code id}
 * @param caseJson the case's whole JSON object, as one line of text
 */
public record CaseRecord(int position, String caseId, String caseJson) {
  public CaseRecord {
    Objects.requireNonNull(caseId, "caseId");
    Objects.requireNonNull(caseJson, "caseJson");
    if (position < 0) {
      throw new IllegalArgumentException("position must be >= 0, got " + position);
    }
  }

  /**
   * Checks that the cases of one run can be stored: no id and no position twice. Every store calls this
   * before it writes anything.
   *
   * @throws IllegalArgumentException naming the first id or position that appears twice
   */
  public static void requireUnique(List<CaseRecord> cases) {
    Set<String> ids = new HashSet<>(cases.size() * 2);
    Set<Integer> positions = new HashSet<>(cases.size() * 2);
    for (CaseRecord c : cases) {
      if (!ids.add(c.caseId())) {
        throw new IllegalArgumentException("cases must have unique ids, but id " + dev.tally.core.cases.CaseLines.quotedId(c.caseId()) + " appears twice");
      }
      if (!positions.add(c.position())) {
        throw new IllegalArgumentException(
            "cases must have unique positions, but position " + c.position() + " appears twice");
      }
    }
  }
}
