package dev.tally.coordinator.security;

import dev.tally.core.security.Secret;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The open-port rule: whether a listener of Tally's may start on an address, and what it must say when it
 * does. The one owner of that rule, for the worker port and the HTTP API alike.
 *
 * <p><b>The rule.</b> A listener on a loopback address (127.0.0.0/8, ::1, or a name that resolves to one)
 * may start as it is: only this machine reaches it. A listener on any other address (a wildcard such as
 * 0.0.0.0 included, and a name that does not resolve) needs a token, because what it serves is worth
 * taking over: the exec evaluator runs any command on every worker, so whoever may submit a run may run
 * code on the fleet, and whoever may join as a worker receives every case and has its verdicts recorded.
 * Without a token it refuses to start, unless the user passed {@code --insecure}; then it starts with a
 * warning that says what is exposed. With a token but without TLS, it starts with a warning that the token
 * and the cases cross the network in clear text.
 *
 * <p>Use: {@link #judge} decides and returns a {@link Decision}; {@link #enforce} decides, logs the
 * warning if there is one, and throws if the listener may not start.
 *
 * <p>Stateless and thread-safe. Judging resolves nothing: it looks at the address as given (resolved
 * when the caller made it, as {@link InetSocketAddress} does).
 */
public final class ListenerSecurity {
  private static final Logger log = LoggerFactory.getLogger(ListenerSecurity.class);

  /** Tally's listeners, with what each exposes and how to give it a token. */
  public enum Listener {
    /** The port workers connect to. */
    WORKER_PORT("the worker port", "--worker-token-file FILE (or " + Secret.WORKER_TOKEN_VARIABLE + ")",
        "anyone who can reach it can join as a worker, receive every case and have made-up verdicts recorded"),
    /** The HTTP API. */
    HTTP_API("the HTTP API", "--api-token-file FILE (or " + Secret.API_TOKEN_VARIABLE + ")",
        "anyone who can reach it can submit runs, and an exec run runs any command on every worker: that is"
            + " remote code execution");

    private final String title;
    private final String howToGiveToken;
    private final String exposure;

    Listener(String title, String howToGiveToken, String exposure) {
      this.title = title;
      this.howToGiveToken = howToGiveToken;
      this.exposure = exposure;
    }

    /** What it is called in messages ("the worker port"). */
    public String title() {
      return title;
    }

    /** What whoever reaches it without a token can do, as a clause. */
    public String exposure() {
      return exposure;
    }
  }

  /**
   * What {@link #judge} decided.
   *
   * @param allowed whether the listener may start
   * @param message if refused, why and what to do; if allowed with a risk, the warning to log at start;
   *     else null
   */
  public record Decision(boolean allowed, String message) {
    /** Whether there is a warning to log (an allowed listener with a risk). */
    public boolean warns() {
      return allowed && message != null;
    }
  }

  /** A listener the rule refuses to start; its message says why and what to do. */
  public static final class InsecureListenerException extends Exception {
    InsecureListenerException(String message) {
      super(message);
    }
  }

  private ListenerSecurity() {}

  /**
   * Whether {@code listener} may start on {@code address}.
   *
   * @param listener which listener
   * @param address where it would listen
   * @param hasToken whether it requires a token of its peers
   * @param tls whether it speaks TLS
   * @param insecure whether the user accepted an open listener ({@code --insecure})
   * @return the decision, with the refusal or the warning
   */
  public static Decision judge(Listener listener, InetSocketAddress address, boolean hasToken, boolean tls,
      boolean insecure) {
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(address, "address");
    if (isLoopback(address)) {
      return new Decision(true, null);
    }
    String where = listener.title + " on " + describe(address) + ", which is not a loopback address,";
    if (!hasToken) {
      if (!insecure) {
        return new Decision(false, where + " would have no token: " + listener.exposure + ". Give it a token with "
            + listener.howToGiveToken + ", listen on 127.0.0.1, or pass --insecure to accept the risk");
      }
      return new Decision(true, "--insecure: " + where + " has no token: " + listener.exposure
          + (tls ? "" : "; and what it carries crosses the network in clear text"));
    }
    if (!tls) {
      return new Decision(true, where + " has no TLS: its token and everything it carries cross the network in"
          + " clear text, for anyone on the path to read (give --tls-cert and --tls-key)");
    }
    return new Decision(true, null);
  }

  /**
   * Judges as {@link #judge} does; logs the warning at WARN if the listener may start with one.
   *
   * @throws InsecureListenerException if the listener may not start; its message says why and what to do
   */
  public static void enforce(Listener listener, InetSocketAddress address, boolean hasToken, boolean tls,
      boolean insecure) throws InsecureListenerException {
    Decision decision = judge(listener, address, hasToken, tls, insecure);
    if (!decision.allowed()) {
      throw new InsecureListenerException(decision.message());
    }
    if (decision.warns()) {
      log.warn(decision.message());
    }
  }

  /**
   * Whether only this machine can reach {@code address}: a resolved loopback address. A wildcard (0.0.0.0,
   * ::) listens on every interface, and an unresolved name could be anything: neither is loopback.
   */
  public static boolean isLoopback(InetSocketAddress address) {
    InetAddress ip = address.getAddress();
    return ip != null && ip.isLoopbackAddress();
  }

  /**
   * Whether a client's connections to {@code host} stay on this machine, so that a token sent in clear text
   * cannot be overheard: a loopback address ({@code 127.0.0.1}, {@code [::1]}, {@code ::ffff:127.0.0.1}), or
   * a name every address of which is loopback ({@code localhost}). The one rule for the command line's
   * clients (the API's and the worker's), which used to be two: one compared text, so {@code
   * 127.evil.example} passed for loopback there and not in the other. A name that cannot be resolved is not
   * loopback.
   *
   * @param host a name or an address, an IPv6 one with or without brackets
   */
  public static boolean isLoopbackHost(String host) {
    String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    try {
      InetAddress[] all = InetAddress.getAllByName(h);
      return all.length > 0 && java.util.Arrays.stream(all).allMatch(InetAddress::isLoopbackAddress);
    } catch (java.net.UnknownHostException e) {
      return false;
    }
  }

  private static String describe(InetSocketAddress address) {
    String host = address.getHostString();
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + address.getPort();
  }
}
