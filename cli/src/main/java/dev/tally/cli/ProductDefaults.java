package dev.tally.cli;

import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.FixedTimeoutDetector;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The defaults the help shows for the coordinator's options, read from their owner, {@link
 * CoordinatorBuilder}, so that {@code --help} cannot drift from what a coordinator does. Commands pass
 * only the options the user gave to the builder ({@link CoordinatorOptions#applyTo}); a value from here
 * is for display and is never set on a builder.
 *
 * <p>Thread-safety: stateless.
 */
public class ProductDefaults implements IDefaultValueProvider {
  /**
   * The default of the option {@code arg}, as text the option's converter reads, or null for an option
   * this class does not know (picocli then uses its annotation's default).
   */
  @Override
  public String defaultValue(ArgSpec arg) {
    if (!(arg instanceof OptionSpec option)) {
      return null;
    }
    return switch (option.longestName()) {
      case "--heartbeat-interval" -> DurationConverter.text(DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL);
      case "--detector" -> CoordinatorBuilder.DEFAULT_DETECTOR.configName();
      case "--detection-window" -> DurationConverter.text(FixedTimeoutDetector.DEFAULT_WINDOW);
      case "--prefetch" -> Integer.toString(CoordinatorBuilder.DEFAULT_PREFETCH);
      case "--speculation" -> CoordinatorBuilder.DEFAULT_SPECULATION.name().toLowerCase(java.util.Locale.ROOT);
      case "--durability" -> CoordinatorBuilder.DEFAULT_DURABILITY.configName();
      case "--listen" -> new HostPort(CoordinatorBuilder.DEFAULT_LISTEN_HOST, 0).toString();
      case "--case-timeout" -> DurationConverter.text(CoordinatorBuilder.DEFAULT_CASE_TIMEOUT);
      case "--idempotency-ttl" -> DurationConverter.text(CoordinatorBuilder.DEFAULT_IDEMPOTENCY_TTL);
      case "--stop-grace" -> DurationConverter.text(dev.tally.http.TallyServer.DEFAULT_STOP_GRACE);
      case "--drain-timeout" -> DurationConverter.text(dev.tally.worker.WorkerSettings.DEFAULT_DRAIN_TIMEOUT);
      // The client commands' retry policy: ApiClient owns it.
      case "--retries" -> Integer.toString(dev.tally.cli.client.ApiClient.DEFAULT_MAX_RETRIES);
      case "--retry-for" -> DurationConverter.text(dev.tally.cli.client.ApiClient.DEFAULT_RETRY_FOR);
      case "--request-timeout" -> DurationConverter.text(dev.tally.cli.client.ApiClient.DEFAULT_REQUEST_TIMEOUT);
      default -> null;
    };
  }
}
