package dev.tally.worker;

import dev.tally.core.Ticker;
import dev.tally.core.security.Secret;
import dev.tally.worker.eval.Evaluator;
import dev.tally.worker.eval.EvaluatorFactory;
import io.netty.handler.ssl.SslContext;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.BiFunction;

/**
 * How a {@link WorkerSession} runs: where the coordinator is, how many slots, and its limits. Immutable;
 * build with {@link #builder(String, int)}, which validates every value.
 *
 * <p>Defaults: {@code slots} 1; {@code name} {@code <hostname>-<pid>}; {@code workerId} a random UUID
 * (fixed for the settings' lifetime, hence for the process); reconnect backoff from {@value
 * #DEFAULT_INITIAL_BACKOFF_MILLIS} ms to {@value #DEFAULT_MAX_BACKOFF_MILLIS} ms with full jitter; {@code
 * maxFrameBytes} {@value #DEFAULT_MAX_FRAME_BYTES}; {@code maxQueuedAssignments} {@link
 * #defaultQueueLimit(int)}; the system ticker; the built-in evaluators; {@code drainTimeout} {@link
 * #DEFAULT_DRAIN_TIMEOUT}; {@code giveUpAfter} null (never give up); {@code token} null (no worker token);
 * {@code tls} null (plaintext).
 *
 * <p>{@code drainTimeout} is how long a graceful drain ({@link WorkerSession#drain()}) lets running cases
 * finish (zero: stop them at once). {@code giveUpAfter}, if not null, is how long the worker may go without
 * a Welcome (from its start, or from losing its coordinator) before it ends ({@link Reconnector}). {@code
 * token}, if not null, is sent in every Hello ({@code credentials}); {@code tls}, if not null, is a client TLS
 * context the connection shakes hands with first, verifying the coordinator's certificate for {@code host}.
 * The record's {@code toString} shows the token's description only ({@link Secret}).
 */
public record WorkerSettings(
    String host,
    int port,
    int slots,
    String name,
    UUID workerId,
    Duration initialBackoff,
    Duration maxBackoff,
    Duration connectTimeout,
    int maxFrameBytes,
    int maxQueuedAssignments,
    Ticker ticker,
    BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory,
    String version,
    Duration drainTimeout,
    Duration giveUpAfter,
    Secret token,
    SslContext tls,
    java.util.List<Address> coordinators) {

  /**
   * One coordinator's worker address.
   *
   * @param host a host name or address
   * @param port 1 to 65535
   */
  public record Address(String host, int port) {
    /**
     * @throws IllegalArgumentException if the host is blank or the port out of range
     */
    public Address {
      Objects.requireNonNull(host, "host");
      if (host.isBlank()) {
        throw new IllegalArgumentException("host must not be blank");
      }
      if (port < 1 || port > 65_535) {
        throw new IllegalArgumentException("port must be in 1..65535, got " + port);
      }
    }

    @Override
    public String toString() {
      return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
  }

  public static final long DEFAULT_INITIAL_BACKOFF_MILLIS = 100;
  public static final long DEFAULT_MAX_BACKOFF_MILLIS = 5_000;

  /**
   * Largest frame accepted from the coordinator: the protocol's default ({@link
   * dev.tally.protocol.codec.FrameCodec#DEFAULT_MAX_FRAME_BYTES}, its one owner), far above any real Assign
   * (a case's JSON), small enough that a corrupt length cannot make the worker allocate gigabytes.
   */
  public static final int DEFAULT_MAX_FRAME_BYTES = dev.tally.protocol.codec.FrameCodec.DEFAULT_MAX_FRAME_BYTES;

  /**
   * Assignments queued per slot before the queue counts as overflowing. The coordinator sends at most its
   * dispatch window (slots plus a small prefetch) so the queue never gets near this; the limit exists so a
   * coordinator bug shows up as a closed connection and a log line, not as a worker out of memory.
   */
  public static final int QUEUED_ASSIGNMENTS_PER_SLOT = 64;

  /**
   * Floor of the queue limit: the most a coordinator may send beyond the slots ({@link
   * dev.tally.protocol.ProtocolLimits#MAX_PREFETCH}), so that no prefetch a coordinator accepts can overflow
   * a worker's queue.
   */
  public static final int MIN_QUEUED_ASSIGNMENTS = dev.tally.protocol.ProtocolLimits.MAX_PREFETCH;

  /**
   * How long a graceful drain waits for running cases by default: 30 s, the grace period Kubernetes gives
   * a pod between SIGTERM and SIGKILL, so that a drained pod's last results are delivered before it is
   * killed. Cases longer than that are stopped and run again elsewhere.
   */
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);

  /**
   * A worker's slots as a command asks for them: the number given, or one per core when none is; the one
   * rule of {@code tally worker}, {@code tally run} and {@code tally server}, which had a copy each.
   *
   * @param asked the slots asked for, or null for the default
   * @return the slots, 1 to {@link dev.tally.protocol.ProtocolLimits#MAX_WORKER_SLOTS}
   * @throws IllegalArgumentException if the number is outside that range, saying the range and the number,
   *     for the caller to put after the option's name
   */
  public static int slots(Integer asked) {
    int slots = asked == null ? Runtime.getRuntime().availableProcessors() : asked;
    if (slots < 1 || slots > dev.tally.protocol.ProtocolLimits.MAX_WORKER_SLOTS) {
      throw new IllegalArgumentException("must be from 1 to " + dev.tally.protocol.ProtocolLimits.MAX_WORKER_SLOTS
          + " (what a coordinator accepts), got " + slots);
    }
    return slots;
  }

  public WorkerSettings {
    Objects.requireNonNull(host, "host");
    if (host.isBlank()) {
      throw new IllegalArgumentException("host must not be blank");
    }
    if (port < 1 || port > 65_535) {
      throw new IllegalArgumentException("port must be in 1..65535, got " + port);
    }
    if (slots < 1) {
      throw new IllegalArgumentException("slots must be >= 1, got " + slots);
    }
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(initialBackoff, "initialBackoff");
    Objects.requireNonNull(maxBackoff, "maxBackoff");
    if (initialBackoff.isZero() || initialBackoff.isNegative()) {
      throw new IllegalArgumentException("initialBackoff must be positive, got " + initialBackoff);
    }
    if (maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException(
          "maxBackoff must be >= initialBackoff " + initialBackoff + ", got " + maxBackoff);
    }
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    if (connectTimeout.isZero() || connectTimeout.isNegative()) {
      throw new IllegalArgumentException("connectTimeout must be positive, got " + connectTimeout);
    }
    if (maxFrameBytes < 64) {
      throw new IllegalArgumentException("maxFrameBytes must be >= 64, got " + maxFrameBytes);
    }
    if (maxQueuedAssignments < 1) {
      throw new IllegalArgumentException("maxQueuedAssignments must be >= 1, got " + maxQueuedAssignments);
    }
    Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(evaluatorFactory, "evaluatorFactory");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(drainTimeout, "drainTimeout");
    if (drainTimeout.isNegative() || drainTimeout.compareTo(Ticker.MAX_DURATION) > 0) {
      throw new IllegalArgumentException("drainTimeout must be from zero to " + Ticker.MAX_DURATION.toDays() + " days, got "
          + drainTimeout);
    }
    if (giveUpAfter != null && (giveUpAfter.isZero() || giveUpAfter.isNegative()
        || giveUpAfter.compareTo(Ticker.MAX_DURATION) > 0)) {
      throw new IllegalArgumentException("giveUpAfter must be positive and at most " + Ticker.MAX_DURATION.toDays()
          + " days (or null for never), got " + giveUpAfter);
    }
    if (tls != null && tls.isServer()) {
      throw new IllegalArgumentException("a worker needs a client TLS context, got a server one");
    }
    coordinators = coordinators == null || coordinators.isEmpty()
        ? java.util.List.of(new Address(host, port)) : java.util.List.copyOf(coordinators);
    if (!coordinators.get(0).equals(new Address(host, port))) {
      throw new IllegalArgumentException("the first coordinator address must be host:port " + host + ":" + port
          + ", got " + coordinators.get(0));
    }
  }

  /**
   * Every coordinator address this worker knows, {@code host:port} first: several coordinators share one store
   * and one of them leads; the worker tries them in turn until one welcomes it (a standby has no worker
   * port open), and after losing a session begins with the next.
   */
  public java.util.List<Address> addresses() {
    return coordinators;
  }

  /** The default queue limit for {@code slots} slots: {@code max(1024, 64 * slots)}. */
  public static int defaultQueueLimit(int slots) {
    return Math.max(MIN_QUEUED_ASSIGNMENTS, QUEUED_ASSIGNMENTS_PER_SLOT * slots);
  }

  /** Settings for a worker of the coordinator at {@code host:port}, with every default. */
  public static Builder builder(String host, int port) {
    return new Builder(host, port);
  }

  /** A builder; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final String host;
    private final int port;
    private int slots = 1;
    private String name;
    private UUID workerId = UUID.randomUUID();
    private Duration initialBackoff = Duration.ofMillis(DEFAULT_INITIAL_BACKOFF_MILLIS);
    private Duration maxBackoff = Duration.ofMillis(DEFAULT_MAX_BACKOFF_MILLIS);
    private Duration connectTimeout = Duration.ofSeconds(5);
    private int maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
    private Integer maxQueuedAssignments;
    private Ticker ticker = Ticker.system();
    private BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory = EvaluatorFactory::create;
    private String version = defaultVersion();
    private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
    private Duration giveUpAfter;
    private Secret token;
    private SslContext tls;
    private java.util.List<Address> coordinators;

    private Builder(String host, int port) {
      this.host = host;
      this.port = port;
    }

    public Builder slots(int slots) {
      this.slots = slots;
      return this;
    }

    public Builder name(String name) {
      this.name = name;
      return this;
    }

    public Builder workerId(UUID workerId) {
      this.workerId = workerId;
      return this;
    }

    public Builder initialBackoff(Duration initialBackoff) {
      this.initialBackoff = initialBackoff;
      return this;
    }

    public Builder maxBackoff(Duration maxBackoff) {
      this.maxBackoff = maxBackoff;
      return this;
    }

    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
      return this;
    }

    public Builder maxFrameBytes(int maxFrameBytes) {
      this.maxFrameBytes = maxFrameBytes;
      return this;
    }

    public Builder maxQueuedAssignments(int maxQueuedAssignments) {
      this.maxQueuedAssignments = maxQueuedAssignments;
      return this;
    }

    public Builder ticker(Ticker ticker) {
      this.ticker = ticker;
      return this;
    }

    /** Replaces the built-in evaluators (tests, or an embedding that adds its own kinds). */
    public Builder evaluatorFactory(BiFunction<String, Map<String, String>, Evaluator> evaluatorFactory) {
      this.evaluatorFactory = evaluatorFactory;
      return this;
    }

    public Builder version(String version) {
      this.version = version;
      return this;
    }

    /** How long a graceful drain lets running cases finish; zero stops them at once. */
    public Builder drainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
      return this;
    }

    /** How long without a Welcome ends the worker; null (the default) for never. */
    public Builder giveUpAfter(Duration giveUpAfter) {
      this.giveUpAfter = giveUpAfter;
      return this;
    }

    /** The worker token sent in every Hello; null (the default) for none. */
    public Builder token(Secret token) {
      this.token = token;
      return this;
    }

    /**
     * The client TLS context to connect with (trusting the coordinator's CA, verifying its host name); null
     * (the default) for plaintext.
     */
    public Builder tls(SslContext tls) {
      this.tls = tls;
      return this;
    }

    /** @throws IllegalArgumentException if a value breaks its rule (the message restates the rule) */
    /**
     * Every coordinator address to try in turn, the builder's {@code host:port} first (default: that one
     * only). Several coordinators on one store: the worker finds the one that leads.
     *
     * @throws IllegalArgumentException if the list is empty, does not start with the builder's address, or
     *     names one address twice
     */
    public Builder coordinators(java.util.List<Address> addresses) {
      if (addresses.isEmpty() || !addresses.get(0).equals(new Address(host, port))) {
        throw new IllegalArgumentException("the coordinator addresses must start with " + host + ":" + port + ", got " + addresses);
      }
      if (new java.util.HashSet<>(addresses).size() != addresses.size()) {
        throw new IllegalArgumentException("a coordinator address is listed twice in " + addresses);
      }
      this.coordinators = java.util.List.copyOf(addresses);
      return this;
    }

    public WorkerSettings build() {
      return new WorkerSettings(
          host,
          port,
          slots,
          name != null ? name : defaultName(),
          workerId,
          initialBackoff,
          maxBackoff,
          connectTimeout,
          maxFrameBytes,
          maxQueuedAssignments != null ? maxQueuedAssignments : defaultQueueLimit(Math.max(1, slots)),
          ticker,
          evaluatorFactory,
          version,
          drainTimeout,
          giveUpAfter,
          token,
          tls,
          coordinators);
    }
  }

  /** {@code <hostname>-<pid>}, the hostname falling back to {@code $HOSTNAME} and then {@code worker}. */
  static String defaultName() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      host = System.getenv().getOrDefault("HOSTNAME", "worker");
    }
    return host + "-" + ProcessHandle.current().pid();
  }

  private static String defaultVersion() {
    String v = WorkerSettings.class.getPackage().getImplementationVersion();
    return v != null ? v : "dev";
  }
}
