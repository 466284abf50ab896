package dev.tally.core;

import java.util.Objects;

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
}
