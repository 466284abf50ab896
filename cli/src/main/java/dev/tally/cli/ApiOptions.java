package dev.tally.cli;

import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.security.Secrets;
import dev.tally.core.security.Secret;
import dev.tally.http.ApiServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;


/**
 * The HTTP API's options, shared by {@code server} (which always serves it) and {@code run} and {@code
 * resume} (which serve it while they run, with {@code --http}). They only carry what the user typed into
 * {@link ApiServer.Settings}, which holds the defaults and checks the values.
 *
 * <p>Thread-safety: filled by picocli, then read by the command's thread.
 */
public final class ApiOptions {
  @Spec(Spec.Target.MIXEE) CommandSpec mixee;

  @Option(names = "--http", converter = HostPort.Converter.class, paramLabel = "HOST:PORT",
      description = "Serve the HTTP API and the web dashboard here (port 0 picks a free one, printed at start). tally server's default: "
          + ApiServer.Settings.DEFAULT_HOST + ":" + ApiServer.Settings.DEFAULT_PORT + ".")
  HostPort http;

  @Option(names = "--api-token-file", paramLabel = "FILE",
      description = "The API's bearer token, from this file (one line); else from $" + Secret.API_TOKEN_VARIABLE
          + ". With a token, every request needs Authorization: Bearer TOKEN. The API takes TLS from --tls-cert/--tls-key"
          + " and an open address needs a token or --insecure, as the worker port does.")
  Path apiTokenFile;

  @Option(names = "--metrics-public", description = "Serve GET /metrics without the token.")
  boolean metricsPublic;

  @Option(names = "--idempotency-ttl", converter = DurationConverter.class, paramLabel = "DURATION",
      description = "How long a submission's Idempotency-Key is kept, and replayed, after its run was created (default "
          + "${DEFAULT-VALUE}); a key reused after that makes a new run.")
  Duration idempotencyTtl;

  /** Whether {@code --http} was given. */
  boolean given() {
    return http != null;
  }

  /** The options that only shape the API, and so mean nothing without it. */
  static final java.util.List<String> API_ONLY = java.util.List.of("--api-token-file", "--metrics-public", "--idempotency-ttl");

  /**
   * For a command that serves the API only with {@code --http} ({@code tally run}, {@code resume}): refuses
   * the options that shape it ({@link #API_ONLY}) without {@code --http}, rather than ignoring them (a user
   * who gives a token file expects the API to need it).
   *
   * @throws ParameterException naming the first such option, if {@code --http} is not given
   */
  void requireHttpForApiOptions() {
    if (http != null) {
      return;
    }
    for (String option : API_ONLY) {
      if (mixee.commandLine().getParseResult().hasMatchedOption(option)) {
        throw new ParameterException(mixee.commandLine(), option + " is for the HTTP API, which tally " + mixee.name()
            + " serves only with --http HOST:PORT");
      }
    }
  }

  /**
   * The API's settings, and {@code --idempotency-ttl} put into {@code coordinator}: {@code --http} or else {@code defaultAddress}, the token (a file, else the
   * environment: {@link Secrets}), and the TLS identity and {@code --insecure} the coordinator's options
   * put in {@code coordinator} (both ports are served alike); uploads are spooled beside the store ({@code
   * tally.db-uploads}), on the store's disk rather than a temporary directory that may be memory.
   *
   * @throws ParameterException naming the option when the token cannot be read or is refused
   */
  ApiServer.Settings settings(HostPort defaultAddress, CoordinatorBuilder coordinator, Map<String, String> environment,
      Path dbFile) {
    HostPort address = http != null ? http : defaultAddress;
    if (mixee.commandLine().getParseResult().hasMatchedOption("--idempotency-ttl")) { // else the field holds the help's default
      try {
        coordinator.idempotencyTtl(idempotencyTtl);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(mixee.commandLine(), "--idempotency-ttl: " + e.getMessage());
      }
    }
    Secret token;
    try {
      token = Secrets.apiToken(apiTokenFile, environment).orElse(null);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), (apiTokenFile != null ? "--api-token-file: " : "") + e.getMessage());
    }
    Path db = dbFile.toAbsolutePath();
    return ApiServer.Settings.builder().bind(address.host(), address.port()).metricsPublic(metricsPublic)
        .token(token).tls(coordinator.tls().orElse(null)).insecure(coordinator.insecure())
        .spoolDirectory(db.resolveSibling(db.getFileName() + "-uploads")).build();
  }
}
