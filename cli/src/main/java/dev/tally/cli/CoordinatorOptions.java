package dev.tally.cli;

import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.security.Secrets;
import dev.tally.coordinator.security.TlsFileException;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.schedule.SpeculationPolicy;
import dev.tally.core.store.Durability;
import dev.tally.core.security.Secret;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The embedded coordinator's options, shared by {@code run}, {@code resume}, {@code bench}, {@code
 * bench-failover} and {@code bench-submit} (and {@code server}). They only carry what the user typed into a {@link CoordinatorBuilder},
 * which holds the defaults and the rules; the defaults shown in the help come from it too ({@link
 * ProductDefaults}). The security options ({@code --worker-token-file}, {@code --tls-cert}, {@code --tls-key},
 * {@code --insecure}) are read here once, through their owners ({@link Secrets}, {@link TlsIdentity}), so a
 * bad file is a usage error naming the option before anything is opened.
 *
 * <p>Thread-safety: filled by picocli, then read by the command's thread.
 */
public final class CoordinatorOptions {
  @Spec(Spec.Target.MIXEE) CommandSpec mixee;

  @Option(names = "--heartbeat-interval", converter = DurationConverter.class,
      description = "How often workers heartbeat (default: ${DEFAULT-VALUE}). Must fit at least 3 times in the detection window.", paramLabel = "DURATION")
  Duration heartbeatInterval;

  @Option(names = "--detector",
      description = "How silence is judged: phi (phi accrual, adapts to the link), fixed (one window of silence) or missed (N missed heartbeats). Default: ${DEFAULT-VALUE}, or fixed when only --detection-window is given.", paramLabel = "KIND")
  String detector;

  @Option(names = "--detection-window", converter = DurationConverter.class,
      description = "For --detector fixed: a worker silent this long is reaped (default ${DEFAULT-VALUE}). For missed: a duration too; the worker is reaped after window / interval missed heartbeats.", paramLabel = "DURATION")
  Duration detectionWindow;

  @Option(names = "--prefetch", paramLabel = "N|none",
      description = "Assignments a worker may hold beyond its slots; none: a case goes only to a free slot (for cases of"
          + " seconds: none then waits behind a long one at the run's end); 0 means as many again as it has slots (default: ${DEFAULT-VALUE}).")
  String prefetch;

  /** The word of {@code --prefetch} for {@link dev.tally.coordinator.net.WorkerServer.Settings#NO_PREFETCH}. */
  static final String NO_PREFETCH_WORD = "none";

  /**
   * {@code --prefetch}'s value as the builder takes it.
   *
   * @throws ParameterException if it is neither a whole number nor {@value #NO_PREFETCH_WORD}
   */
  private int prefetch() {
    if (NO_PREFETCH_WORD.equals(prefetch)) {
      return dev.tally.coordinator.net.WorkerServer.Settings.NO_PREFETCH;
    }
    try {
      int n = Integer.parseInt(prefetch);
      if (n < 0) { // -1 is the constant's value, not a word a user types
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new ParameterException(mixee.commandLine(), "--prefetch must be a whole number (0 or more) or "
          + NO_PREFETCH_WORD + ", got '" + prefetch + "'");
    }
  }

  @Option(names = "--speculation", paramLabel = "on|off|auto",
      description = "Backup attempts of straggling cases near a run's end, on an idle fast worker; the first result is"
          + " recorded, the other attempt abandoned. auto: for every evaluator but model (a backup of a paid call pays"
          + " twice); on: for every evaluator; off: never (default: ${DEFAULT-VALUE}).")
  String speculation;

  @Option(names = "--durability", paramLabel = "full|relaxed",
      description = "What an acknowledged result survives (default: ${DEFAULT-VALUE}). full: a power loss (the store"
          + " fsyncs each commit; group commit pays it once per batch). relaxed: a crash of the coordinator's process,"
          + " not of its machine (SQLite synchronous=NORMAL, PostgreSQL synchronous_commit=off).")
  String durability;

  @Option(names = "--worker-token-file", paramLabel = "FILE",
      description = "File holding the token every worker must present (one line; default: $" + Secret.WORKER_TOKEN_VARIABLE
          + ", else none, which a --listen address other than loopback refuses without --insecure). Local workers get it"
          + " on their stdin, never in their environment or on their command line.")
  Path workerTokenFile;

  @Option(names = "--tls-cert", paramLabel = "FILE",
      description = "PEM certificate chain, this coordinator's own certificate first, for TLS on its listeners (with --tls-key)."
          + " Workers not on this machine must then use TLS (tally worker --tls-ca).")
  Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "FILE",
      description = "PEM private key of --tls-cert (unencrypted: PKCS#8, or PKCS#1 RSA).")
  Path tlsKey;

  @Option(names = "--insecure",
      description = "Let a listener on an address other than loopback start without a token. Anyone who reaches the"
          + " worker port can then join as a worker, receive every case and have made-up verdicts recorded; a warning says so at start.")
  boolean insecure;

  /** The environment tokens are read from when no file is given (a map in tests). */
  Map<String, String> environment = System.getenv();

  /**
   * Puts the options the user gave into {@code builder} and checks them together, before anything is
   * opened.
   *
   * @return {@code builder}
   * @throws ParameterException naming the option(s) when the builder refuses a value or a combination
   */
  public CoordinatorBuilder applyTo(CoordinatorBuilder builder) {
    if (given("--heartbeat-interval")) {
      set("--heartbeat-interval", b -> b.heartbeatInterval(heartbeatInterval), builder);
    }
    if (given("--detector")) {
      set("--detector", b -> b.detector(DetectorSettings.Kind.parse(detector)), builder);
    }
    if (given("--detection-window")) {
      set("--detection-window", b -> b.detectionWindow(detectionWindow), builder);
    }
    if (given("--prefetch")) {
      int n = prefetch();
      set("--prefetch", b -> b.prefetch(n), builder);
    }
    if (given("--speculation")) {
      set("--speculation", b -> b.speculation(SpeculationPolicy.Mode.parse(speculation)), builder);
    }
    if (given("--durability")) {
      set("--durability", b -> b.durability(Durability.parse(durability)), builder);
    }
    applySecurity(builder);
    try {
      builder.workerServerSettings();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), detectorOptions() + ": " + e.getMessage());
    }
    return builder;
  }

  /**
   * The worker token (from {@code --worker-token-file}, else the environment), TLS and {@code --insecure};
   * whether the worker port may then listen where it is asked to is the builder's rule, checked at start.
   */
  private void applySecurity(CoordinatorBuilder builder) {
    try {
      builder.workerToken(Secrets.workerToken(workerTokenFile, environment).orElse(null));
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(),
          (workerTokenFile != null ? "--worker-token-file: " : "") + e.getMessage());
    }
    if ((tlsCert == null) != (tlsKey == null)) {
      throw new ParameterException(mixee.commandLine(), tlsCert == null
          ? "--tls-key needs --tls-cert, the certificate it is the key of" : "--tls-cert needs --tls-key, its private key");
    }
    if (tlsCert != null) {
      try {
        builder.tls(TlsIdentity.load(tlsCert, tlsKey));
      } catch (TlsFileException e) {
        throw new ParameterException(mixee.commandLine(),
            (e.file().equals(tlsKey) && !tlsKey.equals(tlsCert) ? "--tls-key: " : "--tls-cert: ") + e.getMessage());
      }
    }
    builder.insecure(insecure);
  }

  /** Whether the user gave {@code option} (values of options not given are only the help's defaults). */
  public boolean given(String option) {
    CommandLine.ParseResult parsed = mixee.commandLine().getParseResult();
    return parsed != null && parsed.hasMatchedOption(option);
  }

  private void set(String option, Consumer<CoordinatorBuilder> setter, CoordinatorBuilder builder) {
    try {
      setter.accept(builder);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), option + ": " + e.getMessage());
    }
  }

  /** The detector options as given (or "the defaults"), to head a message about their combination. */
  private String detectorOptions() {
    List<String> given = new ArrayList<>();
    if (given("--detector")) {
      given.add("--detector " + detector);
    }
    if (given("--detection-window")) {
      given.add("--detection-window " + DurationConverter.text(detectionWindow));
    }
    if (given("--heartbeat-interval")) {
      given.add("--heartbeat-interval " + DurationConverter.text(heartbeatInterval));
    }
    return given.isEmpty() ? "the default detector settings" : String.join(" ", given);
  }
}
