package dev.tally.cli;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.core.schedule.RetryPolicy;
import dev.tally.core.schedule.Scheduler;
import java.time.Duration;
import picocli.CommandLine.Option;

/** Options of the embedded coordinator, shared by {@code run} and {@code bench}. */
final class CoordinatorOptions {
  @Option(names = "--heartbeat-interval", defaultValue = "1s", converter = DurationConverter.class,
      description = "How often workers heartbeat (default: ${DEFAULT-VALUE}). Must fit at least 3 times in the detection window.")
  Duration heartbeatInterval;

  @Option(names = "--detection-window", defaultValue = "5s", converter = DurationConverter.class,
      description = "A worker silent for this long is reaped and its jobs redelivered (default: ${DEFAULT-VALUE}).")
  Duration detectionWindow;

  @Option(names = "--prefetch", defaultValue = "0",
      description = "Assignments a worker may hold beyond its slots; 0 means as many again as it has slots (default: 0 for run and resume, 128 for bench).")
  int prefetch;

  /**
   * The worker server's settings.
   *
   * @throws IllegalArgumentException if the interval does not fit 3 times in the window, or prefetch is
   *     out of range (the message says which)
   */
  WorkerServer.Settings serverSettings() {
    return WorkerServer.Settings.builder()
        .heartbeatInterval(heartbeatInterval)
        .detectionWindow(detectionWindow)
        .prefetch(prefetch)
        .build();
  }

  /**
   * The worker server's settings, or a usage error that says which option is wrong.
   *
   * @throws picocli.CommandLine.ParameterException if a setting is invalid
   */
  WorkerServer.Settings validatedServerSettings(picocli.CommandLine commandLine) {
    try {
      return serverSettings();
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(commandLine, e.getMessage());
    }
  }

  RetryPolicy retryPolicy() {
    return RetryPolicy.defaults();
  }

  Scheduler.Settings schedulerSettings() {
    return Scheduler.Settings.defaults();
  }
}
