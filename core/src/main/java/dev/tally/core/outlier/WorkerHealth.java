package dev.tally.core.outlier;

import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * One worker as the {@link OutlierDetector} sees it, for {@code tally status}. A copy: it does not change
 * when the detector does.
 *
 * @param workerId the worker
 * @param ejectedUntilMillis when its ejection ends, on the caller's clock; empty while in service
 * @param timesEjected how many times it has been ejected since it joined
 * @param consecutiveFailures infrastructure failures in a row at the end of its record
 * @param recentAttempts attempts in its window (successes and infrastructure failures; at most the window)
 * @param recentFailures infrastructure failures among them
 * @param medianLatencyMillisByKind its median success duration per case kind over its window, in ms
 */
public record WorkerHealth(
    String workerId,
    OptionalLong ejectedUntilMillis,
    int timesEjected,
    int consecutiveFailures,
    int recentAttempts,
    int recentFailures,
    Map<String, Long> medianLatencyMillisByKind) {

  public WorkerHealth {
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(ejectedUntilMillis, "ejectedUntilMillis");
    medianLatencyMillisByKind = Map.copyOf(medianLatencyMillisByKind);
  }

  /** Whether the worker is ejected (gets no new jobs). */
  public boolean ejected() {
    return ejectedUntilMillis.isPresent();
  }

  /** Its infrastructure-failure rate over its window, in [0, 1]; 0 with no attempts yet. */
  public double recentFailureRate() {
    return recentAttempts == 0 ? 0.0 : (double) recentFailures / recentAttempts;
  }
}
