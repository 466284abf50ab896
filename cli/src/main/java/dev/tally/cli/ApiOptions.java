package dev.tally.cli;

import dev.tally.http.ApiServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
  /** The environment variable an API token may come from instead of a file. */
  static final String TOKEN_VARIABLE = "TALLY_API_TOKEN";

  @Spec(Spec.Target.MIXEE) CommandSpec mixee;

  @Option(names = "--http", converter = HostPort.Converter.class, paramLabel = "HOST:PORT",
      description = "Serve the HTTP API here (port 0 picks a free one, printed at start). tally server's default: "
          + ApiServer.Settings.DEFAULT_HOST + ":" + ApiServer.Settings.DEFAULT_PORT + ".")
  HostPort http;

  @Option(names = "--api-token-file", paramLabel = "FILE",
      description = "The API's bearer token, from this file (its trailing newline dropped); else from $" + TOKEN_VARIABLE
          + ". With a token, every request needs Authorization: Bearer TOKEN.")
  Path apiTokenFile;

  @Option(names = "--metrics-public", description = "Serve GET /metrics without the token.")
  boolean metricsPublic;

  /** Whether {@code --http} was given. */
  boolean given() {
    return http != null;
  }

  /**
   * The API's settings: {@code --http} or else {@code defaultAddress}, the token, TLS; uploads are spooled
   * beside the store ({@code tally.db-uploads}), on the store's disk rather than a temporary directory
   * that may be memory. The TLS files are the coordinator's ({@link CoordinatorOptions}' {@code --tls-cert}
   * and {@code --tls-key}): one identity for both of its ports.
   *
   * @throws ParameterException naming the option when a value is refused or the token cannot be read
   */
  ApiServer.Settings settings(HostPort defaultAddress, Map<String, String> environment, Path dbFile, Path tlsCert, Path tlsKey) {
    HostPort address = http != null ? http : defaultAddress;
    ApiServer.Settings.Builder b = ApiServer.Settings.builder();
    try {
      Path db = dbFile.toAbsolutePath();
      b.bind(address.host(), address.port()).metricsPublic(metricsPublic).tls(tlsCert, tlsKey)
          .spoolDirectory(db.resolveSibling(db.getFileName() + "-uploads"));
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), "--tls-cert/--tls-key: " + e.getMessage());
    }
    String token = token(environment);
    try {
      b.token(token);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), (apiTokenFile != null ? "--api-token-file " + apiTokenFile : "$" + TOKEN_VARIABLE)
          + ": " + e.getMessage());
    }
    return b.build();
  }

  /** The token from the file, else the environment, else null; never printed. */
  private String token(Map<String, String> environment) {
    if (apiTokenFile != null) {
      try {
        String text = Files.readString(apiTokenFile, StandardCharsets.UTF_8);
        return text.replaceAll("[\\r\\n]+$", "");
      } catch (IOException e) {
        throw new ParameterException(mixee.commandLine(), "--api-token-file " + apiTokenFile + " cannot be read: " + e.getMessage());
      }
    }
    String fromEnvironment = environment.get(TOKEN_VARIABLE);
    return fromEnvironment == null || fromEnvironment.isEmpty() ? null : fromEnvironment;
  }
}
