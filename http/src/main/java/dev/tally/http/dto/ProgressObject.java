package dev.tally.http.dto;

import java.util.List;

/**
 * A run's progress over time: how many of its cases had ended by the end of each span since its creation
 * (cumulative, for a progress chart; the slope is the rate, and with {@code total} the ETA).
 *
 * @param runId the run
 * @param total its cases
 * @param spanMillis the length of one span, ms
 * @param points one per span in which a case ended, in time order
 */
public record ProgressObject(long runId, long total, long spanMillis, List<Point> points) {
  /**
   * Where the run stood at the end of one span.
   *
   * @param at the span's end, ISO-8601 UTC
   * @param ended cases ended by then
   * @param passed of which passed
   * @param failed of which failed
   * @param errored of which errored (an error verdict, or out of attempts)
   */
  public record Point(String at, long ended, long passed, long failed, long errored) {}
}
