package dev.tally.core.cases;

/**
 * How a case run several times ({@code --epochs K}) is written: K cases, one per epoch, with ids {@code
 * ID#1}..{@code ID#K} and the fields {@value #EPOCH_FIELD} (1-based) and {@value #SAMPLE_ID_FIELD} (the
 * case's own id). The datasets module makes them; the reports read them back (pass@k groups a run's cases
 * by {@value #SAMPLE_ID_FIELD}). One owner, so the two never drift.
 *
 * <p>Thread-safety: stateless.
 */
public final class Epochs {
  /** The field that holds a case's epoch, from 1. */
  public static final String EPOCH_FIELD = "epoch";

  /** The field that holds the id of the case an epoch repeats. */
  public static final String SAMPLE_ID_FIELD = "sampleId";

  private Epochs() {}

  /** The id of epoch {@code k} of the case {@code sampleId}: {@code sampleId#k}. */
  public static String caseId(String sampleId, int k) {
    return sampleId + "#" + k;
  }
}
