package dev.tally.cli;

import dev.tally.cli.client.ApiClient;
import dev.tally.coordinator.security.Secrets;
import dev.tally.coordinator.security.TlsFileException;
import dev.tally.coordinator.security.TlsTrust;
import dev.tally.core.security.Secret;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Where the client commands ({@code submit}, {@code runs}, {@code wait}, {@code results}, {@code cancel})
 * find a Tally server, how they prove who they are, and how hard they try: carried as typed into an {@link
 * ApiClient}, which holds the defaults (shown in the help through {@link ProductDefaults}) and the retry
 * policy. The token is read through its one owner ({@link Secrets}): from {@code --token-file}, else {@code
 * $TALLY_API_TOKEN}, never from an option's value.
 *
 * <p>Thread-safety: filled by picocli, then read by the command's thread.
 */
public final class ServerOptions {
  /** The environment variable that names the server when {@code --server} is not given. */
  static final String SERVER_VARIABLE = "TALLY_SERVER";

  @Spec(Spec.Target.MIXEE) CommandSpec mixee;

  @Option(names = "--server", paramLabel = "URL[,URL...]",
      description = "The Tally server's URL, http://HOST:PORT or https://HOST:PORT (what tally server prints; a trailing /api/v1 is"
          + " fine); for several servers on one store, each of them, comma-separated: requests go to the one that leads."
          + " Default: $" + SERVER_VARIABLE + ", else " + ApiClient.DEFAULT_SERVER + ".")
  String server;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = "File holding the server's API token (one line), sent as a bearer token; default: $" + Secret.API_TOKEN_VARIABLE
          + ", else none.")
  Path tokenFile;

  @Option(names = "--tls-ca", paramLabel = "FILE",
      description = "For an https server: trust only the CA certificates in this PEM file (the server's certificate must name the"
          + " host of --server). Default: the JVM's trusted CAs.")
  Path tlsCa;

  @Option(names = "--retries", paramLabel = "N",
      description = "Retries of a request that got no final answer (connection refused or reset, timeout, 5xx, 429; 409 while a"
          + " submission's key is in use), with jittered exponential backoff (default: ${DEFAULT-VALUE}).")
  int retries;

  @Option(names = "--retry-for", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "No retry begins later than this after the first attempt; "
          + dev.tally.cli.client.ApiClient.FIRST_BACKOFF_MILLIS + "ms or less (0s), no retry"
          + " (default: ${DEFAULT-VALUE}).")
  Duration retryFor;

  @Option(names = "--request-timeout", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "The longest one attempt may take, upload included; then it is retried (default: ${DEFAULT-VALUE}).")
  Duration requestTimeout;

  /** The environment the server and the token are read from (a map in tests). */
  Map<String, String> environment = System.getenv();

  /**
   * A client as the options say.
   *
   * @param err where retries are said
   * @throws ParameterException naming the option when a value is refused or a file cannot be read
   */
  ApiClient client(PrintWriter err) {
    String text = server != null ? server : environment.getOrDefault(SERVER_VARIABLE, ApiClient.DEFAULT_SERVER);
    java.util.List<URI> uris;
    try {
      uris = AddressList.parse(text, ApiClient::serverUri);
    } catch (picocli.CommandLine.TypeConversionException e) {
      throw new ParameterException(mixee.commandLine(), (server != null ? "--server: " : "$" + SERVER_VARIABLE + ": ") + e.getMessage());
    }
    URI uri = uris.get(0);
    Secret token;
    try {
      token = Secrets.apiToken(tokenFile, environment).orElse(null);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), (tokenFile != null ? "--token-file: " : "") + e.getMessage());
    }
    TlsTrust trust = null;
    if (tlsCa != null) {
      for (URI u : uris) {
        if (!u.getScheme().equals("https")) {
          throw new ParameterException(mixee.commandLine(), "--tls-ca is for an https:// server; --server has " + u);
        }
      }
      try {
        trust = TlsTrust.load(tlsCa);
      } catch (TlsFileException e) {
        throw new ParameterException(mixee.commandLine(), "--tls-ca: " + e.getMessage());
      }
    }
    for (URI u : uris) {
      if (token != null && u.getScheme().equals("http") && !dev.tally.coordinator.security.ListenerSecurity.isLoopbackHost(u.getHost())) {
        err.println("tally: warning: the API token goes to " + u.getHost() + " in clear text (http://): anyone on the path can"
            + " read it; serve the API with --tls-cert/--tls-key and use https://");
      }
    }
    try {
      return new ApiClient(new ApiClient.Settings(uri, token, trust, retries, retryFor, requestTimeout, uris), err);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), e.getMessage());
    }
  }
}
