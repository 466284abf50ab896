package dev.tally.core.detect;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.function.LongFunction;

/**
 * Which failure detector a coordinator uses, with its parameters: an immutable, validated value whose
 * {@link #factory()} makes one detector per connection (the worker server's {@code detectorFactory}).
 *
 * <p>Made by {@link #parse(String, Duration)} (a kind's defaults, for a {@code --detector} option) or by
 * {@link #fixed}, {@link #missed} and {@link #phi} with explicit parameters. Every way checks the rule of
 * DESIGN §4: <em>the heartbeat interval must fit at least {@link #MIN_HEARTBEATS_PER_WINDOW} times inside
 * the detection window</em>, where the detection window is the silence that convicts:
 *
 * <ul>
 *   <li>{@link Kind#FIXED}: the window itself;
 *   <li>{@link Kind#MISSED}: {@code convictAfterMissed x heartbeatInterval};
 *   <li>{@link Kind#PHI}: the silence at which φ reaches the threshold once a steady stream at the
 *       interval has filled the history ({@link PhiAccrualDetector.Config#detectionWindow()}) — the
 *       shortest it gets.
 * </ul>
 *
 * <p>Defaults, at the {@linkplain #DEFAULT_HEARTBEAT_INTERVAL 500 ms default interval} (the reasons are in each detector's class doc; the measurement
 * is {@code tally bench-detectors}):
 *
 * <ul>
 *   <li>{@code fixed}: window {@link FixedTimeoutDetector#DEFAULT_WINDOW} (5 s), drain after 3 s;
 *   <li>{@code missed}: convict after 5 missed intervals, drain after 3: 2.5 s and 1.5 s;
 *   <li>{@code phi}: the {@link PhiAccrualDetector} defaults, convicting after about 2.5 s of silence on a
 *       steady link.
 * </ul>
 *
 * <p>Thread-safety: immutable; the factory may be called from any thread, each detector it makes
 * belongs to one connection.
 */
public final class DetectorSettings {
  /**
   * The fewest heartbeat intervals the detection window must hold, as the worker server requires. With
   * fewer, one late heartbeat (a GC pause, a busy network) is most of the window and live workers are
   * reaped.
   */
  public static final int MIN_HEARTBEATS_PER_WINDOW = 3;

  /**
   * The default heartbeat interval, 500 ms: the one default every part uses (worker server, detectors,
   * workers before their Welcome). Measured with {@code tally bench-detectors}: against 1 s, phi with its
   * default threshold and pause convicts a stopped sender 14% sooner on average (2.37 s against 2.75 s)
   * and 40% sooner at worst (3.89 s against 6.44 s), with no false conviction on any trace either way;
   * two heartbeats a second cost a worker nothing measurable.
   */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofMillis(500);

  /** The detector kinds, by the names configuration uses. */
  public enum Kind {
    /** {@link FixedTimeoutDetector}. */
    FIXED("fixed"),
    /** {@link MissedHeartbeatsDetector}. */
    MISSED("missed"),
    /** {@link PhiAccrualDetector}. */
    PHI("phi");

    private final String configName;

    Kind(String configName) {
      this.configName = configName;
    }

    /** The name configuration uses: {@code fixed}, {@code missed} or {@code phi}. */
    public String configName() {
      return configName;
    }

    /**
     * The kind named {@code name}, ignoring case.
     *
     * @throws IllegalArgumentException if {@code name} is not {@code fixed}, {@code missed} or {@code phi}
     */
    public static Kind parse(String name) {
      if (name != null) {
        for (Kind k : values()) {
          if (k.configName.equals(name.trim().toLowerCase(Locale.ROOT))) {
            return k;
          }
        }
      }
      throw new IllegalArgumentException(
          "detector kind must be one of fixed, missed, phi; got " + (name == null ? null : "'" + name + "'"));
    }
  }

  private final Kind kind;
  private final Duration heartbeatInterval;
  private final Duration detectionWindow;
  private final Duration drainWindow;
  private final String description;
  private final LongFunction<FailureDetector> factory;

  private DetectorSettings(Kind kind, Duration heartbeatInterval, Duration detectionWindow,
      Duration drainWindow, String description, LongFunction<FailureDetector> factory) {
    if (detectionWindow.compareTo(heartbeatInterval.multipliedBy(MIN_HEARTBEATS_PER_WINDOW)) < 0) {
      throw new IllegalArgumentException("the heartbeat interval must fit at least "
          + MIN_HEARTBEATS_PER_WINDOW + " times inside the detection window, got an interval of "
          + heartbeatInterval.toMillis() + "ms and a window of " + detectionWindow.toMillis() + "ms ("
          + description + ")" + (kind == Kind.PHI
              ? "; phi's window is the interval plus its acceptable pause plus a margin: use a shorter"
                  + " interval, or --detector fixed with a --detection-window of at least 3 intervals"
              : ""));
    }
    this.kind = kind;
    this.heartbeatInterval = heartbeatInterval;
    this.detectionWindow = detectionWindow;
    this.drainWindow = drainWindow;
    this.description = description;
    this.factory = factory;
  }

  /**
   * The defaults of the kind named {@code kind} for workers heartbeating every {@code heartbeatInterval}.
   *
   * @throws IllegalArgumentException if the kind is unknown, the interval is not positive, or the
   *     interval does not fit {@link #MIN_HEARTBEATS_PER_WINDOW} times inside that kind's default
   *     detection window (for {@code fixed} and {@code phi} the window is a time, so an interval above
   *     about 1.6 s needs explicit settings)
   */
  public static DetectorSettings parse(String kind, Duration heartbeatInterval) {
    return defaults(Kind.parse(kind), heartbeatInterval);
  }

  /** As {@link #parse(String, Duration)}, for a kind already parsed. */
  public static DetectorSettings defaults(Kind kind, Duration heartbeatInterval) {
    Objects.requireNonNull(kind, "kind");
    return switch (kind) {
      case FIXED -> fixed(heartbeatInterval, FixedTimeoutDetector.DEFAULT_WINDOW,
          FixedTimeoutDetector.defaultDrainAfter(FixedTimeoutDetector.DEFAULT_WINDOW));
      case MISSED -> missed(MissedHeartbeatsDetector.builder().heartbeatInterval(heartbeatInterval).build());
      case PHI -> phi(PhiAccrualDetector.builder().heartbeatInterval(heartbeatInterval).build());
    };
  }

  /**
   * A {@link FixedTimeoutDetector} convicting after {@code window} and draining after {@code drainAfter}.
   *
   * @throws IllegalArgumentException if the interval or window is not positive, {@code drainAfter} is not
   *     positive or longer than the window, or the interval does not fit {@link
   *     #MIN_HEARTBEATS_PER_WINDOW} times inside the window
   */
  public static DetectorSettings fixed(Duration heartbeatInterval, Duration window, Duration drainAfter) {
    requirePositive("heartbeatInterval", heartbeatInterval);
    FixedTimeoutDetector probe = new FixedTimeoutDetector(window, drainAfter, 0); // validates both
    return new DetectorSettings(Kind.FIXED, heartbeatInterval, window, drainAfter, probe.describe(),
        start -> new FixedTimeoutDetector(window, drainAfter, start));
  }

  /**
   * A {@link MissedHeartbeatsDetector}; its interval is the heartbeat interval.
   *
   * @throws IllegalArgumentException if {@code convictAfterMissed} is below {@link
   *     #MIN_HEARTBEATS_PER_WINDOW}
   */
  public static DetectorSettings missed(MissedHeartbeatsDetector.Config config) {
    Objects.requireNonNull(config, "config");
    return new DetectorSettings(Kind.MISSED, config.heartbeatInterval(), config.detectionWindow(),
        config.drainWindow(), config.describe(), config::newDetector);
  }

  /**
   * A {@link PhiAccrualDetector}; its heartbeat interval (the seed and sample floor) is the heartbeat
   * interval.
   *
   * @throws IllegalArgumentException if the steady-state detection window holds fewer than {@link
   *     #MIN_HEARTBEATS_PER_WINDOW} intervals
   */
  public static DetectorSettings phi(PhiAccrualDetector.Config config) {
    Objects.requireNonNull(config, "config");
    return new DetectorSettings(Kind.PHI, config.heartbeatInterval(), config.detectionWindow(),
        config.drainWindow(), config.describe(), config::newDetector);
  }

  /** The detector kind. */
  public Kind kind() {
    return kind;
  }

  /** The interval the workers heartbeat at. */
  public Duration heartbeatInterval() {
    return heartbeatInterval;
  }

  /** The silence that convicts (for phi, on a steady link); see the class doc. */
  public Duration detectionWindow() {
    return detectionWindow;
  }

  /** The silence that drains (for phi, on a steady link). */
  public Duration drainWindow() {
    return drainWindow;
  }

  /** Makes a connection's detector, given the ticker reading when the connection opened. */
  public LongFunction<FailureDetector> factory() {
    return factory;
  }

  /** For logs: the detector and all its settings. */
  public String describe() {
    return description;
  }

  @Override
  public String toString() {
    return describe();
  }

  private static void requirePositive(String name, Duration d) {
    if (d == null || d.isZero() || d.isNegative()) {
      throw new IllegalArgumentException(name + " must be positive, got " + d);
    }
  }
}
