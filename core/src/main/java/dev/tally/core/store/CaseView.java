package dev.tally.core.store;

import java.util.Objects;

/**
 * A case of a run as the API shows it: its job, and the timing of the attempt that recorded it.
 *
 * @param job the case's job
 * @param timing the recorded attempt's durations, or {@link AttemptTiming#NONE} if it is not recorded
 */
public record CaseView(JobView job, AttemptTiming timing) {
  public CaseView {
    Objects.requireNonNull(job, "job");
    Objects.requireNonNull(timing, "timing");
  }
}
