package dev.tally.coordinator.net;

import dev.tally.core.Ticker;
import dev.tally.core.detect.FailureDetector;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.core.detect.LocalHealth;
import dev.tally.core.schedule.WorkerEvents;
import dev.tally.core.security.Secret;
import dev.tally.protocol.ProtocolLimits;
import dev.tally.protocol.codec.FrameCodec;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coordinator's worker port: a Netty TCP server that gives every accepted socket its own
 * {@link WorkerConnection} (the connection actor's Netty driver, over a {@link ConnectionCore}) and reports
 * sessions to a {@link WorkerEvents} sink.
 *
 * <p>Usage:
 *
 * <pre>{@code
 * try (WorkerServer server = WorkerServer.start(new InetSocketAddress("0.0.0.0", 7311),
 *     WorkerServer.Settings.defaults(), events)) {
 *   int port = server.port();   // the bound port; useful when started on port 0
 *   ...
 * }
 * }</pre>
 *
 * <p><b>Security</b> comes with the settings: a worker token ({@link Settings#workerToken()}) is checked by
 * each connection's {@link ConnectionCore} on its Hello; TLS ({@link Settings#tls()}) is spoken with every
 * peer that is not on this machine, and may be with those that are ({@link TlsUnlessLocal}). Whether the
 * port may listen where it is asked to without them is {@link dev.tally.coordinator.security.ListenerSecurity}'s
 * rule, applied by the coordinator builder.
 *
 * <p>The server also keeps the map from worker id to its live session ({@link LiveSessions}): a {@code
 * Hello} with a worker id that already has a live session closes the older one ("superseded by a new
 * session") before the new one joins.
 *
 * <p><b>Local health.</b> The port keeps one {@link LocalHealth} for all its sessions and ticks it every
 * {@link LocalHealth.Config#tickPeriod()} on one of the I/O event loops (a fixed delay, so a tick's
 * lateness is how starved the loops that read the workers' frames are), logging when conviction starts
 * or stops waiting longer than usual. See {@link #localHealth()}.
 *
 * <p>Thread-safety: {@link #port()}, {@link #localHealth()} and {@link #close()} are safe from any
 * thread. Connections run on the server's I/O event loops.
 */
public final class WorkerServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WorkerServer.class);

  /** How long {@link #close()} waits for the event loops to finish their queued work. */
  private static final long SHUTDOWN_TIMEOUT_MILLIS = 2_000;

  /** The most slots a worker may announce in its Hello; more is refused ({@link ProtocolLimits#MAX_WORKER_SLOTS}). */
  public static final int MAX_WORKER_SLOTS = ProtocolLimits.MAX_WORKER_SLOTS;

  private final Settings settings;
  private final String storeId;
  private final EventLoopGroup bossGroup;
  private final EventLoopGroup ioGroup;
  private final ChannelGroup allChannels = new DefaultChannelGroup("tally-workers", GlobalEventExecutor.INSTANCE);
  private final ConnectionCore.Context context;
  private final Channel serverChannel;
  private final ScheduledFuture<?> healthTicks;
  /** Each I/O event loop's one timer for its connections (created on a loop's first connection). */
  private final Map<EventExecutor, ConnectionSweep> sweeps = new ConcurrentHashMap<>();
  private volatile boolean closed;

  private WorkerServer(InetSocketAddress listen, Settings settings, WorkerEvents events, String storeId) {
    this.settings = settings;
    this.storeId = storeId;
    this.context = new ConnectionCore.Context(settings, storeId, events, new LiveSessions());
    LocalHealth health = context.health();
    this.bossGroup = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    this.ioGroup = new MultiThreadIoEventLoopGroup(settings.ioThreads(), NioIoHandler.newFactory());
    ServerBootstrap bootstrap = new ServerBootstrap()
        .group(bossGroup, ioGroup)
        .channel(NioServerSocketChannel.class)
        .childOption(ChannelOption.TCP_NODELAY, true) // small frames (heartbeats, acks) must not wait
        .childOption(ChannelOption.SO_KEEPALIVE, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            if (closed) {
              ch.close();
              return;
            }
            allChannels.add(ch);
            if (settings.tls() != null) {
              ch.pipeline().addLast("tls", new TlsUnlessLocal(settings.tls(), context.refusals(), settings.ticker()));
            }
            FrameCodec.install(ch.pipeline(), settings.maxFrameBytes());
            ch.pipeline().addLast("tally-connection", new WorkerConnection(WorkerServer.this, context, ch));
          }
        });
    try {
      this.serverChannel = bootstrap.bind(listen).syncUninterruptibly().channel();
    } catch (Exception e) { // Netty rethrows the bind's checked exception undeclared
      shutdownGroups();
      String why = listen.isUnresolved() ? "the host '" + listen.getHostString() + "' cannot be resolved"
          : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
      throw new UncheckedIOException(new IOException("cannot bind the worker port " + listen + ": " + why, e));
    }
    this.healthTicks = settings.localHealth().enabled() ? ioGroup.next().scheduleWithFixedDelay(
        () -> healthTick(health), 0, settings.localHealth().tickPeriod().toNanos(), TimeUnit.NANOSECONDS) : null;
    log.info("worker server listening on {} ({})", serverChannel.localAddress(), settings);
  }

  /** One tick of the local health, on an I/O event loop; logs when the multiplier changes. */
  private void healthTick(LocalHealth health) {
    LocalHealth.Observation o = health.tick(settings.ticker().nanos());
    if (!o.changed()) {
      return;
    }
    if (o.scoreBefore() == 0 || o.scoreAfter() == 0) {
      log.warn("local health: {}; a worker is convicted after {} times its detector's usual silence",
          o.reason(), o.scoreAfter() + 1);
    } else {
      log.info("local health: {}; a worker is convicted after {} times its detector's usual silence",
          o.reason(), o.scoreAfter() + 1);
    }
  }

  /**
   * The observer's health as the port's sessions use it: the multiplier that stretches their detectors,
   * and what raised it. Safe from any thread.
   */
  public LocalHealth.Snapshot localHealth() {
    return context.health().snapshot();
  }

  /**
   * Binds the worker port and starts accepting workers.
   *
   * @param listen the address to bind, e.g. {@code 0.0.0.0:7311}; port 0 picks a free ephemeral port
   *     (see {@link #port()})
   * @param settings heartbeat, detection and frame settings
   * @param events where sessions are reported; called from I/O threads, must not block
   * @throws UncheckedIOException if the address cannot be bound (for example, the port is in use)
   */
  public static WorkerServer start(InetSocketAddress listen, Settings settings, WorkerEvents events) {
    return start(listen, settings, events, "");
  }

  /**
   * Binds the worker port and starts accepting workers for the store with the given identity: it is sent
   * in every Welcome, and held jobs a worker reports from another store are not claimed (see {@code
   * Welcome.store_id} in the protocol).
   *
   * @param listen the address to bind; port 0 picks a free ephemeral port (see {@link #port()})
   * @param settings heartbeat, detection and frame settings
   * @param events where sessions are reported; called from I/O threads, must not block
   * @param storeId the store's identity ({@link dev.tally.core.store.Store#storeId()}), or empty for none
   *     (a server without a store, in tests: no worker drops anything for it)
   * @throws UncheckedIOException if the address cannot be bound (for example, the port is in use)
   */
  public static WorkerServer start(InetSocketAddress listen, Settings settings, WorkerEvents events, String storeId) {
    Objects.requireNonNull(listen, "listen");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(events, "events");
    Objects.requireNonNull(storeId, "storeId");
    return new WorkerServer(listen, settings, events, storeId);
  }

  /** The identity of the store this server's coordinator records into, or empty. */
  public String storeId() {
    return storeId;
  }

  /**
   * Binds {@code host:port} and starts accepting workers; see {@link #start(InetSocketAddress, Settings,
   * WorkerEvents)}.
   *
   * @throws IllegalArgumentException if {@code port} is outside 0..65535
   * @throws UncheckedIOException if the address cannot be bound
   */
  public static WorkerServer start(String host, int port, Settings settings, WorkerEvents events) {
    Objects.requireNonNull(host, "host");
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port must be between 0 and 65535, got " + port);
    }
    return start(new InetSocketAddress(host, port), settings, events);
  }

  /** The port actually bound (the ephemeral one when started on port 0). */
  public int port() {
    return ((InetSocketAddress) serverChannel.localAddress()).getPort();
  }

  /** The bound address. */
  public InetSocketAddress address() {
    return (InetSocketAddress) serverChannel.localAddress();
  }

  /** The settings this server runs with. */
  public Settings settings() {
    return settings;
  }

  /** The sweep of the event loop {@code loop} (see {@link ConnectionSweep}); made on first use. */
  ConnectionSweep sweepOf(EventExecutor loop) {
    return sweeps.computeIfAbsent(loop, l -> new ConnectionSweep(l, settings.reapCheckPeriod().toNanos()));
  }

  /** How many connections the event loops' sweeps hold, from any thread (for tests). */
  int sweptConnections() {
    return sweeps.values().stream().mapToInt(ConnectionSweep::size).sum();
  }

  /**
   * Stops accepting, closes every connection with a Goodbye (each joined session reports
   * {@link WorkerEvents#workerLost} with reason "coordinator shutting down") and stops the I/O threads.
   * Idempotent; blocks for at most a few seconds.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (healthTicks != null) {
      healthTicks.cancel(false);
    }
    serverChannel.close().awaitUninterruptibly();
    for (Channel ch : allChannels) {
      WorkerConnection c = ch.pipeline().get(WorkerConnection.class);
      if (c != null) {
        c.closeFromAnyThread("coordinator shutting down");
      }
    }
    allChannels.close().awaitUninterruptibly(SHUTDOWN_TIMEOUT_MILLIS);
    shutdownGroups();
    log.info("worker server stopped");
  }

  private void shutdownGroups() {
    bossGroup.shutdownGracefully(0, SHUTDOWN_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    ioGroup.shutdownGracefully(0, SHUTDOWN_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS).awaitUninterruptibly();
    bossGroup.terminationFuture().awaitUninterruptibly();
  }

  // ---- for WorkerConnection (same package) ----

  /** Whether {@link #close()} has begun: a connection that ends now was closed by the coordinator. */
  boolean isClosing() {
    return closed;
  }

  /**
   * How the worker server runs: heartbeat interval, failure detector, frame limit, prefetch, clock.
   * Immutable; built with {@link #builder()}.
   *
   * <p>Defaults are the product's, from {@link dev.tally.coordinator.CoordinatorBuilder}, which owns them
   * (a coordinator is normally assembled there, and these settings with it):
   *
   * <ul>
   *   <li>{@code heartbeatInterval}: {@link DetectorSettings#DEFAULT_HEARTBEAT_INTERVAL} (500 ms), told to
   *       workers in Welcome;
   *   <li>the detector: {@link dev.tally.coordinator.CoordinatorBuilder#detectorSettings(DetectorSettings.Kind,
   *       Duration, Duration)} for the interval: phi accrual, or the fixed detector over the window when only
   *       {@link Builder#detectionWindow} is given; {@link Builder#detector} or {@link
   *       Builder#detectorFactory} replace it. The interval must fit at least {@link
   *       DetectorSettings#MIN_HEARTBEATS_PER_WINDOW} times in the detection window;
   *   <li>{@code localHealth}: {@link dev.tally.coordinator.CoordinatorBuilder#DEFAULT_LOCAL_HEALTH} (on: see
   *       {@link LocalHealth});
   *   <li>{@code maxFrameBytes}: {@link FrameCodec#DEFAULT_MAX_FRAME_BYTES} (4 MiB);
   *   <li>{@code prefetch}: {@link dev.tally.coordinator.CoordinatorBuilder#DEFAULT_PREFETCH}, 0, meaning "as
   *       many as the worker's slots", so a worker's dispatch window is twice its slots;
   *   <li>{@code ticker}: {@link Ticker#system()};
   *   <li>{@code ioThreads}: 0, Netty's default (twice the processors);
   *   <li>{@code coordinatorEpoch}: 0, sent in Welcome for the worker's log;
   *   <li>{@code workerToken}: none (workers are not asked for one); {@code tls}: none (plaintext). Whether
   *       that may listen where it is asked to is {@link dev.tally.coordinator.security.ListenerSecurity}'s
   *       rule, which {@link dev.tally.coordinator.CoordinatorBuilder} applies.
   * </ul>
   */
  public static final class Settings {
    /**
     * The shortest heartbeat interval allowed, 10 ms. Shorter, a worker's I/O thread spends its time on
     * heartbeats, and ordinary scheduling delays of a few milliseconds are whole missed intervals: the
     * fleet is reaped for nothing.
     */
    public static final Duration MIN_HEARTBEAT_INTERVAL = Duration.ofMillis(10);

    /**
     * The largest prefetch: what a worker's queue is sure to hold ({@link ProtocolLimits#MAX_PREFETCH}).
     * More would overflow it, and the worker would close the connection at every reconnect.
     */
    public static final int MAX_PREFETCH = ProtocolLimits.MAX_PREFETCH;

    /**
     * The prefetch that holds nothing beyond a worker's slots: a worker is sent a case only when one of its
     * slots is free. For cases of seconds or more (a test module, a model call with retries) the round trip
     * to the next case is nothing beside them, and no case waits queued behind a long one on one worker
     * while another worker idles at the end of the run, as a prefetched case can; {@code tally run --prefetch
     * none}.
     */
    public static final int NO_PREFETCH = -1;

    /**
     * The slowest the reaper looks for convicted connections (it looks every tenth of the window if less):
     * every check can add this much to the time a dead worker's jobs wait, and a check is a few
     * arithmetic operations on the connection's own event loop. Detection times measured on a detector
     * alone ({@code tally bench-detectors}) are short of a real reap by up to this much.
     */
    public static final Duration MAX_REAP_CHECK_PERIOD = Duration.ofMillis(100);

    private final Duration heartbeatInterval;
    private final Duration detectionWindow;
    private final LongFunction<FailureDetector> detectorFactory;
    private final LocalHealth.Config localHealth;
    private final int maxFrameBytes;
    private final int prefetch;
    private final Ticker ticker;
    private final int ioThreads;
    private final long coordinatorEpoch;
    private final Secret workerToken;
    private final SslContext tls;

    private Settings(Builder b, Duration detectionWindow, LongFunction<FailureDetector> detectorFactory) {
      this.heartbeatInterval = b.heartbeatInterval;
      this.detectionWindow = detectionWindow;
      this.detectorFactory = detectorFactory;
      this.localHealth = b.localHealth;
      this.maxFrameBytes = b.maxFrameBytes;
      this.prefetch = b.prefetch;
      this.ticker = b.ticker;
      this.ioThreads = b.ioThreads;
      this.coordinatorEpoch = b.coordinatorEpoch;
      this.workerToken = b.workerToken;
      this.tls = b.tls;
    }

    /** The settings with every default: the product's (see the class doc). */
    public static Settings defaults() {
      return builder().build();
    }

    /** A builder holding every default. */
    public static Builder builder() {
      return new Builder();
    }

    /** How often workers heartbeat (told to them in Welcome). */
    public Duration heartbeatInterval() {
      return heartbeatInterval;
    }

    /** The silence the detector convicts after (for phi, on a steady link); also sets how often the reaper looks. */
    public Duration detectionWindow() {
      return detectionWindow;
    }

    /** Makes a connection's detector, given the ticker reading when the connection opened. */
    public LongFunction<FailureDetector> detectorFactory() {
      return detectorFactory;
    }

    /** How the observer's own health stretches the detectors' judgement ({@link LocalHealth}). */
    public LocalHealth.Config localHealth() {
      return localHealth;
    }

    /** The largest Envelope accepted or sent, in bytes. */
    public int maxFrameBytes() {
      return maxFrameBytes;
    }

    /**
     * Extra assignments a worker may hold beyond its slots; 0 means "as many as its slots", {@link
     * #NO_PREFETCH} none.
     */
    public int prefetch() {
      return prefetch;
    }

    /** The monotonic clock fed to detectors. */
    public Ticker ticker() {
      return ticker;
    }

    /** I/O event loop threads; 0 means Netty's default. */
    public int ioThreads() {
      return ioThreads;
    }

    /** The coordinator's epoch, for Welcome. */
    public long coordinatorEpoch() {
      return coordinatorEpoch;
    }

    /**
     * The token a worker's Hello must carry, or null if the port accepts workers without one. Checked by
     * {@link ConnectionCore} before anything else a Hello says.
     */
    public Secret workerToken() {
      return workerToken;
    }

    /**
     * The port's TLS, or null for plaintext. With TLS, peers that are not on this machine must shake hands
     * first; peers on it may still speak plaintext (see {@link WorkerServer}).
     */
    public SslContext tls() {
      return tls;
    }

    /** The dispatch window of a worker with {@code slots} slots: slots plus the prefetch. */
    public int dispatchWindow(int slots) {
      return slots + (prefetch == 0 ? slots : prefetch == NO_PREFETCH ? 0 : prefetch);
    }

    /**
     * How often a connection asks its detector whether it is convicted: a tenth of the detection window,
     * at most {@link #MAX_REAP_CHECK_PERIOD} (100 ms), at least 1 ms. A driver of {@link ConnectionCore}
     * calls its liveness check at this period.
     */
    public Duration reapCheckPeriod() {
      Duration tenth = detectionWindow.dividedBy(10);
      Duration period = tenth.compareTo(MAX_REAP_CHECK_PERIOD) < 0 ? tenth : MAX_REAP_CHECK_PERIOD;
      return period.isZero() ? Duration.ofMillis(1) : period;
    }

    @Override
    public String toString() {
      return "heartbeat every " + heartbeatInterval.toMillis() + "ms, detection window "
          + detectionWindow.toMillis() + "ms, max frame " + maxFrameBytes + " bytes, prefetch "
          + (prefetch == 0 ? "= slots" : prefetch == NO_PREFETCH ? "none" : prefetch) + ", " + localHealth.describe()
          + (workerToken != null ? ", worker token required" : "")
          + (tls != null ? ", TLS" : "");
    }

    /** Builds {@link Settings}; every setter validates its argument and says the rule it broke. */
    public static final class Builder {
      private Duration heartbeatInterval = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;
      /** Null: the detector's own window ({@link #detector}), or {@link FixedTimeoutDetector#DEFAULT_WINDOW} for a bare factory. */
      private Duration detectionWindow;
      private LongFunction<FailureDetector> detectorFactory;
      private LocalHealth.Config localHealth = dev.tally.coordinator.CoordinatorBuilder.DEFAULT_LOCAL_HEALTH;
      private int maxFrameBytes = FrameCodec.DEFAULT_MAX_FRAME_BYTES;
      private int prefetch = dev.tally.coordinator.CoordinatorBuilder.DEFAULT_PREFETCH;
      private Ticker ticker = Ticker.system();
      private int ioThreads;
      private long coordinatorEpoch;
      private Secret workerToken;
      private SslContext tls;

      private Builder() {}

      /**
       * @throws IllegalArgumentException if not a whole number of milliseconds (it travels as
       *     milliseconds), below {@link #MIN_HEARTBEAT_INTERVAL} or above 2^32-1 ms
       */
      public Builder heartbeatInterval(Duration interval) {
        this.heartbeatInterval = positiveMillis("heartbeatInterval", interval);
        if (interval.compareTo(MIN_HEARTBEAT_INTERVAL) < 0) {
          throw new IllegalArgumentException("heartbeatInterval must be at least " + MIN_HEARTBEAT_INTERVAL.toMillis()
              + "ms, got " + interval.toMillis() + "ms");
        }
        if (interval.toMillis() > 0xFFFF_FFFFL) {
          throw new IllegalArgumentException(
              "heartbeatInterval must fit the wire's uint32 milliseconds, got " + interval);
        }
        return this;
      }

      /**
       * The silence that convicts. Without a {@link #detectorFactory}, the detector is the fixed one over
       * this window (as {@link dev.tally.coordinator.CoordinatorBuilder#detectorSettings} chooses).
       *
       * @throws IllegalArgumentException if not positive or not a whole number of milliseconds
       */
      public Builder detectionWindow(Duration window) {
        this.detectionWindow = positiveMillis("detectionWindow", window);
        return this;
      }

      /**
       * The detector, its heartbeat interval and its window in one: what a coordinator normally passes.
       * The window is rounded up to whole milliseconds for the reaper.
       *
       * @throws IllegalArgumentException if the detector's heartbeat interval is refused by {@link
       *     #heartbeatInterval}
       */
      public Builder detector(DetectorSettings detector) {
        Objects.requireNonNull(detector, "detector");
        heartbeatInterval(detector.heartbeatInterval());
        this.detectionWindow = ceilMillis(detector.detectionWindow());
        this.detectorFactory = detector.factory();
        return this;
      }

      /**
       * Replaces the default detector; the factory is given the ticker reading at which the connection
       * opened. The detection window (default {@link FixedTimeoutDetector#DEFAULT_WINDOW} here) still sets
       * how often the reaper looks.
       */
      public Builder detectorFactory(LongFunction<FailureDetector> factory) {
        this.detectorFactory = Objects.requireNonNull(factory, "detectorFactory");
        return this;
      }

      /**
       * How the observer's own health stretches the detectors' judgement; {@link LocalHealth.Config#off()}
       * judges by the detectors' settings alone.
       *
       * @throws NullPointerException if null
       */
      public Builder localHealth(LocalHealth.Config localHealth) {
        this.localHealth = Objects.requireNonNull(localHealth, "localHealth");
        return this;
      }

      /** @throws IllegalArgumentException if below 1 or above {@code Integer.MAX_VALUE - 4} */
      public Builder maxFrameBytes(int maxFrameBytes) {
        if (maxFrameBytes < 1 || maxFrameBytes > Integer.MAX_VALUE - FrameCodec.LENGTH_PREFIX_BYTES) {
          throw new IllegalArgumentException("maxFrameBytes must be between 1 and "
              + (Integer.MAX_VALUE - FrameCodec.LENGTH_PREFIX_BYTES) + ", got " + maxFrameBytes);
        }
        this.maxFrameBytes = maxFrameBytes;
        return this;
      }

      /**
       * Extra assignments per worker beyond its slots; 0 (the default) means "as many as its slots", {@link
       * #NO_PREFETCH} none.
       *
       * @throws IllegalArgumentException if below {@link #NO_PREFETCH} or above {@link #MAX_PREFETCH}
       */
      public Builder prefetch(int prefetch) {
        if (prefetch < NO_PREFETCH || prefetch > MAX_PREFETCH) {
          throw new IllegalArgumentException(
              "prefetch must be between 0 and " + MAX_PREFETCH + " (0 = as many as the worker's slots), or none, got "
                  + prefetch);
        }
        this.prefetch = prefetch;
        return this;
      }

      public Builder ticker(Ticker ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        return this;
      }

      /** @throws IllegalArgumentException if negative */
      public Builder ioThreads(int ioThreads) {
        if (ioThreads < 0) {
          throw new IllegalArgumentException("ioThreads must be >= 0 (0 = Netty's default), got " + ioThreads);
        }
        this.ioThreads = ioThreads;
        return this;
      }

      public Builder coordinatorEpoch(long epoch) {
        this.coordinatorEpoch = epoch;
        return this;
      }

      /** The token every worker's Hello must carry; null (the default) accepts workers without one. */
      public Builder workerToken(Secret token) {
        this.workerToken = token;
        return this;
      }

      /** The port's TLS (a server context); null (the default) for plaintext. */
      public Builder tls(SslContext tls) {
        if (tls != null && !tls.isServer()) {
          throw new IllegalArgumentException("the worker port needs a server TLS context, got a client one");
        }
        this.tls = tls;
        return this;
      }

      /**
       * @throws IllegalArgumentException if the heartbeat interval does not fit at least
       *     {@link DetectorSettings#MIN_HEARTBEATS_PER_WINDOW} times in the detection window
       */
      public Settings build() {
        Duration window = detectionWindow;
        LongFunction<FailureDetector> factory = detectorFactory;
        if (window == null) {
          window = factory == null
              ? ceilMillis(dev.tally.coordinator.CoordinatorBuilder.detectorSettings(null, heartbeatInterval, null).detectionWindow())
              : FixedTimeoutDetector.DEFAULT_WINDOW;
        }
        if (heartbeatInterval.multipliedBy(DetectorSettings.MIN_HEARTBEATS_PER_WINDOW).compareTo(window) > 0) {
          throw new IllegalArgumentException(
              "heartbeat interval " + heartbeatInterval.toMillis() + "ms must fit at least "
                  + DetectorSettings.MIN_HEARTBEATS_PER_WINDOW + " times in the detection window " + window.toMillis()
                  + "ms: with fewer, one late heartbeat (a GC pause, a busy network) reaps a live worker");
        }
        if (factory == null) {
          factory = dev.tally.coordinator.CoordinatorBuilder.detectorSettings(null, heartbeatInterval, detectionWindow).factory();
        }
        return new Settings(this, window, factory);
      }

      /** The reaper works in whole milliseconds; a detector's window may not be one. */
      private static Duration ceilMillis(Duration d) {
        long millis = d.toMillis();
        return d.equals(Duration.ofMillis(millis)) ? d : Duration.ofMillis(millis + 1);
      }

      private static Duration positiveMillis(String name, Duration d) {
        Objects.requireNonNull(d, name);
        if (d.isNegative() || d.isZero() || !d.equals(Duration.ofMillis(d.toMillis()))) {
          throw new IllegalArgumentException(
              name + " must be a positive whole number of milliseconds, got "
                  + (d.equals(Duration.ofMillis(d.toMillis())) ? d.toMillis() + "ms" : d));
        }
        return d;
      }
    }
  }
}
