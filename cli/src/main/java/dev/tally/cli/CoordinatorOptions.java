package dev.tally.cli;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.core.detect.MissedHeartbeatsDetector;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.schedule.Scheduler;
import java.time.Duration;
import picocli.CommandLine.Option;

/** Options of the embedded coordinator, shared by {@code run} and {@code bench}. */
public final class CoordinatorOptions {
  @Option(names = "--heartbeat-interval", defaultValue = "500ms", converter = DurationConverter.class,
      description = "How often workers heartbeat (default: ${DEFAULT-VALUE}). Must fit at least 3 times in the detection window.")
  Duration heartbeatInterval;

  @Option(names = "--detector",
      description = "How silence is judged: phi (phi accrual, adapts to the link), fixed (one window of silence) or missed (N missed heartbeats). Default: phi, or fixed when --detection-window is given.")
  String detector;

  @Option(names = "--detection-window", converter = DurationConverter.class,
      description = "For --detector fixed: a worker silent this long is reaped (default 5s). For missed: a duration too; the worker is reaped after window / interval missed heartbeats.")
  Duration detectionWindow;

  @Option(names = "--prefetch", defaultValue = "0",
      description = "Assignments a worker may hold beyond its slots; 0 means as many again as it has slots (default: 0 for run and resume, 128 for bench).")
  public int prefetch;

  /**
   * The worker server's settings.
   *
   * @throws IllegalArgumentException if the interval does not fit 3 times in the window, or prefetch is
   *     out of range (the message says which)
   */
  WorkerServer.Settings serverSettings() {
    DetectorSettings ds = detectorSettings();
    return WorkerServer.Settings.builder()
        .heartbeatInterval(ds.heartbeatInterval())
        .detectionWindow(roundUpToMillis(ds.detectionWindow()))
        .detectorFactory(ds.factory())
        .prefetch(prefetch)
        .build();
  }

  /**
   * The failure detector the options describe; see {@link DetectorSettings} for each kind's defaults and
   * the benchmark that chose them.
   *
   * @throws IllegalArgumentException if the heartbeat interval is under 10 ms, the kind is unknown, a
   *     window is given for phi, or the heartbeat interval does not fit 3 times in the detection window
   */
  public DetectorSettings detectorSettings() {
    if (heartbeatInterval.compareTo(WorkerServer.Settings.MIN_HEARTBEAT_INTERVAL) < 0) {
      throw new IllegalArgumentException("--heartbeat-interval must be at least "
          + WorkerServer.Settings.MIN_HEARTBEAT_INTERVAL.toMillis() + "ms, got " + heartbeatInterval.toMillis() + "ms");
    }
    String kind = detector != null ? detector : detectionWindow != null ? "fixed" : "phi";
    DetectorSettings.Kind parsed = DetectorSettings.Kind.parse(kind);
    if (detectionWindow == null) {
      return DetectorSettings.defaults(parsed, heartbeatInterval);
    }
    switch (parsed) {
      case FIXED:
        return DetectorSettings.fixed(heartbeatInterval, detectionWindow, FixedTimeoutDetector.defaultDrainAfter(detectionWindow));
      case MISSED:
        long n = detectionWindow.toNanos() / heartbeatInterval.toNanos();
        return DetectorSettings.missed(MissedHeartbeatsDetector.builder().heartbeatInterval(heartbeatInterval)
            .convictAfterMissed((int) Math.max(1, n)).drainAfterMissed(Math.max(1, n * 0.6)).build());
      default:
        throw new IllegalArgumentException("--detection-window is for --detector fixed or missed; phi derives its window from the heartbeat history");
    }
  }

  private static Duration roundUpToMillis(Duration d) {
    long millis = d.toMillis();
    return d.equals(Duration.ofMillis(millis)) ? d : Duration.ofMillis(millis + 1);
  }

  /**
   * The worker server's settings, or a usage error that says which option is wrong.
   *
   * @throws picocli.CommandLine.ParameterException if a setting is invalid
   */
  public WorkerServer.Settings validatedServerSettings(picocli.CommandLine commandLine) {
    try {
      return serverSettings();
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(commandLine, e.getMessage());
    }
  }

  public RedeliveryPolicy redelivery() {
    return RedeliveryPolicy.defaults();
  }

  public Scheduler.Settings schedulerSettings() {
    return Scheduler.Settings.defaults();
  }
}
