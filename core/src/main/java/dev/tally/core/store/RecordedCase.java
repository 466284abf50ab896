package dev.tally.core.store;

import dev.tally.core.Outcome;
import java.util.Objects;

/**
 * A job that is done, with its case and its recorded outcome: one row of the pages {@link
 * StoreTransaction#recordedCases} reads for {@link BatchRules#rescore}.
 *
 * @param jobId the job
 * @param position its place in the dataset, from 0
 * @param caseJson the case, a JSON object's text
 * @param outcome the outcome recorded for it
 */
public record RecordedCase(long jobId, int position, String caseJson, Outcome outcome) {
  public RecordedCase {
    Objects.requireNonNull(caseJson, "caseJson");
    Objects.requireNonNull(outcome, "outcome");
  }
}
