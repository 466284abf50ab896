package dev.tally.coordinator;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.coordinator.security.ListenerSecurity;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.core.detect.DetectorSettings;
import dev.tally.core.detect.LocalHealth;
import dev.tally.core.detect.FixedTimeoutDetector;
import dev.tally.core.detect.MissedHeartbeatsDetector;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.Ticker;
import dev.tally.core.schedule.Scheduler;
import dev.tally.core.schedule.SpeculationPolicy;
import dev.tally.core.schedule.SchedulerObserver;
import dev.tally.core.store.Durability;
import dev.tally.core.store.Store;
import dev.tally.core.store.StoreException;
import dev.tally.core.security.Secret;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Assembles a running {@link Coordinator} (the store, the scheduler on its loop thread, the worker
 * server) and holds the product's defaults: code that embeds a coordinator gets what {@code tally run}
 * gets and the README describes, and the command line only parses its options into a builder. Modelled
 * on db-scheduler's {@code SchedulerBuilder}.
 *
 * <pre>{@code
 * try (Coordinator coordinator = Coordinator.builder()
 *     .storeFile(Path.of("tally.db"))              // opened, migrated and locked; closed with the coordinator
 *     .listen(new InetSocketAddress("0.0.0.0", 7070))
 *     .start()) {
 *   RunResumption.Choice run = coordinator.resumption().runFor(spec, cases);
 *   RunCounters done = coordinator.submit(run.runId()).get();
 * }
 * }</pre>
 *
 * <p><b>Defaults</b> (each setter says what it replaces):
 *
 * <ul>
 *   <li>listen address: {@value #DEFAULT_LISTEN_HOST}, port 0 (a free port, loopback only);
 *   <li>heartbeat interval: {@link DetectorSettings#DEFAULT_HEARTBEAT_INTERVAL} (500 ms), told to
 *       workers in Welcome;
 *   <li>failure detector: {@link #DEFAULT_DETECTOR} (phi accrual) with {@link DetectorSettings#defaults
 *       its kind's defaults} for the heartbeat interval; a detection window given without a kind selects
 *       the fixed detector ({@link #detectorSettings(DetectorSettings.Kind, Duration, Duration)} is the
 *       rule);
 *   <li>local health: {@link #DEFAULT_LOCAL_HEALTH}, on: a starved coordinator, or many workers silent at
 *       once, stretch every detector's judgement up to 9 times, the coordinator's own lateness is forgiven
 *       up to 10 s and a worker's reported scheduling lag up to 5 s ({@link LocalHealth});
 *   <li>prefetch: {@value #DEFAULT_PREFETCH}, meaning as many assignments again as a worker has slots;
 *   <li>largest frame: {@link dev.tally.protocol.codec.FrameCodec#DEFAULT_MAX_FRAME_BYTES};
 *   <li>lease duration, store-failure limits and the poison limit: {@link Scheduler.Settings#defaults()};
 *   <li>redelivery (backoff, poison limit): {@link RedeliveryPolicy#defaults()}; attempt limits are each run's;
 *   <li>speculative execution: {@link #DEFAULT_SPECULATION}, backup attempts of stragglers near a run's end
 *       for every evaluator but the paid model evaluator ({@link SpeculationPolicy#defaults()});
 *   <li>idempotency keys: kept {@link #DEFAULT_IDEMPOTENCY_TTL} after their response, held {@link
 *       #DEFAULT_KEY_HOLD} at a time by a request in progress;
 *   <li>durability of an acknowledged result: {@link #DEFAULT_DURABILITY} (it survives a power loss);
 *   <li>observers of the scheduler: none;
 *   <li>security: no worker token, no TLS, not {@link #insecure}: so by {@link ListenerSecurity}'s rule the
 *       worker port may listen on a loopback address only until a token (or {@code insecure}) is given.
 * </ul>
 *
 * <p><b>At start</b>, a coordinator that opens its store file (and so holds the store's {@link
 * CoordinatorLock}) releases every idempotency key a request of an earlier process still held: nobody
 * can be serving it any more, so a client's retry after a restart succeeds at once instead of waiting out
 * the hold.
 *
 * <p><b>Limits</b>, refused when set: a heartbeat interval under {@link
 * WorkerServer.Settings#MIN_HEARTBEAT_INTERVAL} or not fitting {@link
 * DetectorSettings#MIN_HEARTBEATS_PER_WINDOW} times in the detection window, a prefetch above
 * {@link WorkerServer.Settings#MAX_PREFETCH}; workers announcing more than {@link
 * WorkerServer#MAX_WORKER_SLOTS} slots are refused by the worker port.
 *
 * <p>Thread-safety: a builder is used by one thread; the coordinator it starts is thread-safe.
 */
public final class CoordinatorBuilder {
  /**
   * The default time budget of one attempt at a case, for a run submitted without one ({@code tally run
   * --case-timeout}, the API's {@code settings.caseTimeout}): long enough for a real test suite's module or
   * a model call with retries, short enough that a hanging case costs minutes, not a night.
   */
  public static final java.time.Duration DEFAULT_CASE_TIMEOUT = java.time.Duration.ofMinutes(10);

  /** The default address to listen on: loopback, so a coordinator is not reachable from elsewhere unless asked. */
  public static final String DEFAULT_LISTEN_HOST = "127.0.0.1";

  /**
   * The default failure detector: phi accrual. Of the settings {@code tally bench-detectors} measured, its
   * defaults are the only ones that made no false conviction on any trace and still detect a stopped
   * worker in about 2.4 s on average (the fixed and missed-heartbeat detectors take 5 s); see the README's
   * detector table.
   */
  public static final DetectorSettings.Kind DEFAULT_DETECTOR = DetectorSettings.Kind.PHI;

  /**
   * The default prefetch, 0: a worker holds as many assignments again as it has slots, so it always has a
   * next case at hand while its slots run, and a long run's tail is not held back on one worker.
   */
  public static final int DEFAULT_PREFETCH = 0;

  /**
   * The default local health rule: on, with {@link LocalHealth}'s and {@link
   * dev.tally.core.detect.PeerLag}'s defaults. On a machine with more busy processes than cores it is
   * what keeps live workers from being reaped ({@code tally bench-failover --starved} measures both);
   * on a healthy one it changes nothing, since the multiplier stays 1 and workers report no lag.
   */
  public static final LocalHealth.Config DEFAULT_LOCAL_HEALTH = LocalHealth.Config.defaults();

  /**
   * How long a completed idempotency key is kept (its response replayed to a retry): 24 hours, the
   * Idempotency-Key draft's example and what payment APIs keep; a client retrying a submission is done
   * retrying long before. A key reused after it is a new submission.
   */
  public static final Duration DEFAULT_IDEMPOTENCY_TTL = Duration.ofHours(24);

  /**
   * How long a request in progress holds its key unless it renews the hold (it renews every third of it
   * while it lives): 30 seconds, so a request that died (client gone, server killed) blocks a retry of its
   * key at most that long, while a slow but live upload never loses it.
   */
  public static final Duration DEFAULT_KEY_HOLD = Duration.ofSeconds(30);

  /**
   * How long a leader's lease holds unless renewed: 3 seconds. With {@link #DEFAULT_LEADER_RENEWAL} it survives
   * two late renewals in a row (a slow commit, a pause of the collector); with {@link #DEFAULT_STANDBY_RETRY} a
   * standby leads within 3.5 s of the leader's {@code kill -9} or SIGSTOP, inside the 5 s the README promises.
   */
  public static final Duration DEFAULT_LEADER_LEASE = Duration.ofSeconds(3);

  /** How often a leader renews its lease: every second, a third of the lease. */
  public static final Duration DEFAULT_LEADER_RENEWAL = Duration.ofSeconds(1);

  /**
   * How often a standby reads the leader row: every half second. It adds at most this to a takeover, for one
   * read of a one-row table per standby each time.
   */
  public static final Duration DEFAULT_STANDBY_RETRY = Duration.ofMillis(500);

  /**
   * How long past its lapsed lease a leader that cannot reach its store holds on before it steps down: as
   * long as a write of the store waits for a lost connection ({@link dev.tally.store.JdbcStore#RECONNECT_PATIENCE},
   * 30 s), so that a database restart the store rides out does not end the lead (and a {@code tally run}) half
   * way. Nothing is risked meanwhile: every write carries the epoch, and the first look that reaches the store
   * steps down if another epoch leads.
   */
  public static final Duration DEFAULT_LEADER_PATIENCE = dev.tally.store.JdbcStore.RECONNECT_PATIENCE;

  /**
   * The default speculative execution, {@link SpeculationPolicy.Mode#AUTO}: near a run's end a straggling
   * case gets a backup attempt on an idle fast worker, and the first result is recorded. A worker ten times
   * slower than the rest otherwise holds every run's end for ten case durations. A model call is not copied
   * unless asked ({@code --speculation on}): its backup pays twice.
   */
  public static final SpeculationPolicy.Mode DEFAULT_SPECULATION = SpeculationPolicy.Mode.AUTO;

  /**
   * The default durability, {@link Durability#FULL}: an acknowledged result survives a power loss, not
   * only a crash of the coordinator, which is what an ack promises a worker that then forgets the result.
   * Group commit pays the fsync once per batch, so the default costs little throughput; {@link
   * Durability#RELAXED} is the opt-out for a store whose machine's crash is not worth an fsync per batch.
   */
  public static final Durability DEFAULT_DURABILITY = Durability.FULL;

  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(CoordinatorBuilder.class);

  private Store store;
  /** Where the store is when the coordinator opens it itself; {@code null} with {@link #store(Store)}. */
  private StoreLocation storeLocation;
  private Stores.Options storeOptions = Stores.Options.defaults();
  private Durability durability = DEFAULT_DURABILITY;
  private InetSocketAddress listen = new InetSocketAddress(DEFAULT_LISTEN_HOST, 0);
  private Duration heartbeatInterval = DetectorSettings.DEFAULT_HEARTBEAT_INTERVAL;
  /** Null: {@link #DEFAULT_DETECTOR}, or fixed when a window is given. */
  private DetectorSettings.Kind detector;
  /** Null: the detector kind's own default. */
  private Duration detectionWindow;
  /** The worker port's settings other than the detector, validated by their owner as they are set. */
  private final WorkerServer.Settings.Builder server = WorkerServer.Settings.builder();
  private RedeliveryPolicy redelivery = RedeliveryPolicy.defaults();
  private Scheduler.Settings schedulerSettings = Scheduler.Settings.defaults();
  private SpeculationPolicy speculation = SpeculationPolicy.defaults().withMode(DEFAULT_SPECULATION);
  private final java.util.List<SchedulerObserver> observers = new java.util.ArrayList<>();
  private Duration idempotencyTtl = DEFAULT_IDEMPOTENCY_TTL;
  private Duration keyHold = DEFAULT_KEY_HOLD;
  /** Null: workers need no token (allowed on loopback only, or with {@link #insecure}). */
  private Secret workerToken;
  /** Null: plaintext. */
  private TlsIdentity tls;
  private boolean insecure;
  private dev.tally.core.lead.LeaderLease.Settings leaderLease = new dev.tally.core.lead.LeaderLease.Settings(
      DEFAULT_LEADER_LEASE, DEFAULT_LEADER_RENEWAL, DEFAULT_STANDBY_RETRY, DEFAULT_LEADER_PATIENCE);
  private boolean standby;

  CoordinatorBuilder() {}

  /**
   * The leader lease's timing (default {@link #DEFAULT_LEADER_LEASE}, renewed every {@link
   * #DEFAULT_LEADER_RENEWAL}, standbys looking every {@link #DEFAULT_STANDBY_RETRY}, a leader in doubt holding on
   * for {@link #DEFAULT_LEADER_PATIENCE}).
   */
  public CoordinatorBuilder leaderLease(dev.tally.core.lead.LeaderLease.Settings settings) {
    this.leaderLease = Objects.requireNonNull(settings, "settings");
    return this;
  }

  /** The leader lease's timing. */
  public dev.tally.core.lead.LeaderLease.Settings leaderLease() {
    return leaderLease;
  }

  /**
   * Whether the coordinator may start as a standby when another coordinator leads the store (default false):
   * {@code tally server}, one of several on one store. A standby opens no worker port and schedules nothing;
   * it serves reads, and takes the lead when the leader's lease lapses ({@link Coordinator#leading}). It takes
   * no {@link CoordinatorLock}: a frozen leader would hold it. Without it, {@link #start} waits up to one lease
   * and a standby retry for the lead (a leader killed a moment ago), then fails with {@link
   * StartException.Reason#STORE_LED}.
   */
  public CoordinatorBuilder standby(boolean standby) {
    this.standby = standby;
    return this;
  }

  /**
   * Adds an observer of the scheduler (metrics, an event stream); see {@link SchedulerObserver}. None by
   * default.
   */
  public CoordinatorBuilder observer(SchedulerObserver observer) {
    observers.add(Objects.requireNonNull(observer, "observer"));
    return this;
  }

  /**
   * How long a completed idempotency key is kept (default {@link #DEFAULT_IDEMPOTENCY_TTL}).
   *
   * @throws IllegalArgumentException if not positive or longer than {@link Ticker#MAX_DURATION}
   */
  public CoordinatorBuilder idempotencyTtl(Duration ttl) {
    this.idempotencyTtl = positive("the idempotency key time to live", ttl);
    return this;
  }

  /**
   * How long a request in progress holds its idempotency key between renewals (default {@link
   * #DEFAULT_KEY_HOLD}).
   *
   * @throws IllegalArgumentException if not positive or longer than {@link Ticker#MAX_DURATION}
   */
  public CoordinatorBuilder keyHold(Duration hold) {
    this.keyHold = positive("the idempotency key hold", hold);
    return this;
  }

  private static Duration positive(String what, Duration d) {
    Objects.requireNonNull(d, what);
    if (d.isZero() || d.isNegative() || d.compareTo(Ticker.MAX_DURATION) > 0) {
      throw new IllegalArgumentException(what + " must be positive and at most " + Ticker.MAX_DURATION.toDays()
          + " days, got " + dev.tally.core.DurationText.text(d));
    }
    return d;
  }

  /**
   * Works on a store the caller opened (already migrated); the coordinator does not close it and takes
   * no {@link CoordinatorLock} (the caller may). Replaces {@link #storeFile} and {@link #storeLocation}.
   */
  public CoordinatorBuilder store(Store store) {
    this.store = Objects.requireNonNull(store, "store");
    this.storeLocation = null;
    return this;
  }

  /**
   * Works on the SQLite store in {@code file}: {@link #start()} takes the store's {@link CoordinatorLock},
   * then opens it (creating and migrating it as needed); the coordinator closes both when it closes.
   * Replaces {@link #store(Store)}.
   */
  public CoordinatorBuilder storeFile(Path file) {
    return storeLocation(new StoreLocation.SqliteFile(Objects.requireNonNull(file, "file")), Stores.Options.defaults());
  }

  /**
   * Works on the store at {@code location} (a {@code --db} value, {@link StoreLocation#parse}): {@link
   * #start()} opens it through {@link Stores#open} (creating and migrating it as needed), a SQLite file
   * under its {@link CoordinatorLock}; the coordinator closes it when it closes. Replaces {@link
   * #store(Store)} and {@link #storeFile}.
   *
   * @param options the clock, and where a PostgreSQL password comes from
   */
  public CoordinatorBuilder storeLocation(StoreLocation location, Stores.Options options) {
    this.storeLocation = Objects.requireNonNull(location, "location");
    this.storeOptions = Objects.requireNonNull(options, "options");
    this.store = null;
    return this;
  }

  /**
   * What an acknowledged result survives (default {@link #DEFAULT_DURABILITY}), for the store {@link
   * #storeLocation} (or {@link #storeFile}) opens; a store given to {@link #store(Store)} keeps the level it was opened with.
   */
  public CoordinatorBuilder durability(Durability durability) {
    this.durability = Objects.requireNonNull(durability, "durability");
    return this;
  }

  /** The durability the store at {@link #storeLocation} is opened with: {@link #durability(Durability)}'s, or the default. */
  public Durability durability() {
    return durability;
  }

  /** The address workers connect to; port 0 picks a free port (see {@link Coordinator#port()}). */
  public CoordinatorBuilder listen(InetSocketAddress address) {
    this.listen = Objects.requireNonNull(address, "address");
    return this;
  }

  /**
   * How often workers heartbeat (default {@link DetectorSettings#DEFAULT_HEARTBEAT_INTERVAL}).
   *
   * @throws IllegalArgumentException if it is under {@link WorkerServer.Settings#MIN_HEARTBEAT_INTERVAL},
   *     not a whole number of milliseconds, or longer than the wire's 2^32-1 ms
   */
  public CoordinatorBuilder heartbeatInterval(Duration interval) {
    server.heartbeatInterval(interval); // its owner's checks
    this.heartbeatInterval = interval;
    return this;
  }

  /** The failure detector's kind (default {@link #DEFAULT_DETECTOR}; fixed if only a window is given). */
  public CoordinatorBuilder detector(DetectorSettings.Kind kind) {
    this.detector = Objects.requireNonNull(kind, "kind");
    return this;
  }

  /**
   * The silence that convicts, for the fixed detector (default {@link FixedTimeoutDetector#DEFAULT_WINDOW})
   * and the missed-heartbeat one (the window over the interval is the number of missed heartbeats). Given
   * without {@link #detector}, it selects the fixed detector. Phi derives its window from the heartbeat
   * history and refuses one.
   *
   * @throws IllegalArgumentException if it is not positive
   */
  public CoordinatorBuilder detectionWindow(Duration window) {
    Objects.requireNonNull(window, "window");
    if (window.isZero() || window.isNegative()) {
      throw new IllegalArgumentException("the detection window must be positive, got " + window.toMillis() + "ms");
    }
    this.detectionWindow = window;
    return this;
  }

  /**
   * Assignments a worker may hold beyond its slots; 0 (the default) means as many as its slots, {@link
   * WorkerServer.Settings#NO_PREFETCH} none (a case is sent only to a free slot).
   *
   * @throws IllegalArgumentException if below {@link WorkerServer.Settings#NO_PREFETCH} or above {@link
   *     WorkerServer.Settings#MAX_PREFETCH}
   */
  public CoordinatorBuilder prefetch(int prefetch) {
    server.prefetch(prefetch);
    return this;
  }

  /**
   * How the coordinator's own health stretches failure detection (default {@link #DEFAULT_LOCAL_HEALTH});
   * {@link LocalHealth.Config#off()} judges workers by the detector's settings alone.
   *
   * @throws NullPointerException if null
   */
  public CoordinatorBuilder localHealth(LocalHealth.Config localHealth) {
    server.localHealth(localHealth);
    return this;
  }

  /**
   * The largest frame accepted or sent, in bytes.
   *
   * @throws IllegalArgumentException if below 1 or above the length prefix's range
   */
  public CoordinatorBuilder maxFrameBytes(int maxFrameBytes) {
    server.maxFrameBytes(maxFrameBytes);
    return this;
  }

  /** What happens to a job whose attempt failed retryably (default {@link RedeliveryPolicy#defaults()}). */
  public CoordinatorBuilder redelivery(RedeliveryPolicy policy) {
    this.redelivery = Objects.requireNonNull(policy, "policy");
    return this;
  }

  /**
   * Which runs' stragglers get backup attempts ({@code --speculation on|off}; default {@link
   * #DEFAULT_SPECULATION}): {@link SpeculationPolicy.Mode#ON} every run's, the model evaluator's included;
   * {@link SpeculationPolicy.Mode#OFF} none.
   */
  public CoordinatorBuilder speculation(SpeculationPolicy.Mode mode) {
    this.speculation = speculation.withMode(Objects.requireNonNull(mode, "mode"));
    return this;
  }

  /** The speculation policy the coordinator will use. */
  public SpeculationPolicy speculation() {
    return speculation;
  }

  /** Lease duration, store-failure limits and poison limit (default {@link Scheduler.Settings#defaults()}). */
  public CoordinatorBuilder schedulerSettings(Scheduler.Settings settings) {
    this.schedulerSettings = Objects.requireNonNull(settings, "settings");
    return this;
  }

  /**
   * The token every worker must present in its Hello (default: none, which {@link ListenerSecurity} allows
   * on a loopback address only, or with {@link #insecure}). Local worker processes get it through their
   * environment ({@link Secret#WORKER_TOKEN_VARIABLE}), never their command line.
   *
   * @param token the token, or null for none
   */
  public CoordinatorBuilder workerToken(Secret token) {
    this.workerToken = token;
    return this;
  }

  /** The worker token, if one was given. */
  public Optional<Secret> workerToken() {
    return Optional.ofNullable(workerToken);
  }

  /**
   * The TLS identity of the coordinator's listeners (default: none, plaintext): the worker port speaks TLS
   * with every peer not on this machine; the HTTP API, where there is one, takes it too.
   *
   * @param identity a loaded certificate and key ({@link TlsIdentity#load}), or null for plaintext
   */
  public CoordinatorBuilder tls(TlsIdentity identity) {
    this.tls = identity;
    return this;
  }

  /** The TLS identity, if one was given. */
  public Optional<TlsIdentity> tls() {
    return Optional.ofNullable(tls);
  }

  /**
   * Whether a listener on a non-loopback address may start without a token ({@code --insecure}; default
   * false): it then starts with a warning saying what is exposed ({@link ListenerSecurity}).
   */
  public CoordinatorBuilder insecure(boolean insecure) {
    this.insecure = insecure;
    return this;
  }

  /** Whether {@link #insecure} was set. */
  public boolean insecure() {
    return insecure;
  }

  /** The address the worker port will listen on. */
  public InetSocketAddress listen() {
    return listen;
  }

  /** The retry policy the coordinator will use. */
  public RedeliveryPolicy redelivery() {
    return redelivery;
  }

  /**
   * The failure detector this builder describes.
   *
   * @throws IllegalArgumentException if a window is given for phi, or the heartbeat interval does not fit
   *     {@link DetectorSettings#MIN_HEARTBEATS_PER_WINDOW} times in the detector's window
   */
  public DetectorSettings detectorSettings() {
    return detectorSettings(detector, heartbeatInterval, detectionWindow);
  }

  /**
   * The worker port's settings this builder describes, detector included; every check the coordinator
   * would make at start, made now (a command line calls it before it opens anything).
   *
   * @throws IllegalArgumentException as {@link #detectorSettings()} does
   */
  public WorkerServer.Settings workerServerSettings() {
    return server.detector(detectorSettings()).workerToken(workerToken)
        .tls(tls != null ? tls.nettyServerContext() : null).build();
  }

  /**
   * The product's choice of failure detector: {@code kind} if given, else fixed when a window is given,
   * else {@link #DEFAULT_DETECTOR}; with its kind's defaults ({@link DetectorSettings#defaults}) for the
   * heartbeat interval, or over the given window: the fixed detector convicts after it and drains after
   * {@link FixedTimeoutDetector#DEFAULT_DRAIN_FRACTION} of it; the missed-heartbeat detector convicts after
   * window / interval missed heartbeats (at least one) and drains after the same share of them as its
   * defaults do ({@link MissedHeartbeatsDetector#DEFAULT_DRAIN_AFTER_MISSED} of {@link
   * MissedHeartbeatsDetector#DEFAULT_CONVICT_AFTER_MISSED}).
   *
   * @param kind the detector asked for, or null
   * @param heartbeatInterval the workers' heartbeat interval
   * @param window the detection window asked for, or null
   * @throws IllegalArgumentException if a window is given for phi, or the heartbeat interval does not fit
   *     {@link DetectorSettings#MIN_HEARTBEATS_PER_WINDOW} times in the detector's window
   */
  public static DetectorSettings detectorSettings(DetectorSettings.Kind kind, Duration heartbeatInterval, Duration window) {
    Objects.requireNonNull(heartbeatInterval, "heartbeatInterval");
    DetectorSettings.Kind chosen = kind != null ? kind : window != null ? DetectorSettings.Kind.FIXED : DEFAULT_DETECTOR;
    if (window == null) {
      return DetectorSettings.defaults(chosen, heartbeatInterval);
    }
    switch (chosen) {
      case FIXED:
        return DetectorSettings.fixed(heartbeatInterval, window, FixedTimeoutDetector.defaultDrainAfter(window));
      case MISSED:
        long missed = Math.max(1, window.toNanos() / heartbeatInterval.toNanos());
        double drainShare = MissedHeartbeatsDetector.DEFAULT_DRAIN_AFTER_MISSED / MissedHeartbeatsDetector.DEFAULT_CONVICT_AFTER_MISSED;
        return DetectorSettings.missed(MissedHeartbeatsDetector.builder().heartbeatInterval(heartbeatInterval)
            .convictAfterMissed((int) Math.min(Integer.MAX_VALUE, missed)).drainAfterMissed(Math.max(1, missed * drainShare)).build());
      default:
        throw new IllegalArgumentException(
            "a detection window is for the fixed or missed detector; phi derives its window from the heartbeat history");
    }
  }

  /**
   * Starts the coordinator: checks that a fixed worker port can be bound (before anything is created: a
   * busy port leaves no store file behind); with {@link #storeLocation} (or {@link #storeFile}), opens the
   * store (a SQLite file under its lock); binds the worker port; starts the scheduler's loop. On failure
   * everything already taken is released.
   *
   * @return the running coordinator; close it when done
   * @throws IllegalStateException if none of {@link #store}, {@link #storeFile} and {@link #storeLocation} was given
   * @throws IllegalArgumentException as {@link #workerServerSettings()} does
   * @throws StartException if the worker port would listen on a non-loopback address without a token and
   *     without {@link #insecure} (the open-port rule, {@link ListenerSecurity}), the store is locked by
   *     another coordinator, its lock or the store cannot be opened, or the address cannot be bound; {@link
   *     StartException#reason()} says which
   */
  public Coordinator start() throws StartException {
    if (store == null && storeLocation == null) {
      throw new IllegalStateException("a coordinator needs a store: call store(Store), storeFile(Path) or storeLocation");
    }
    try {
      ListenerSecurity.enforce(ListenerSecurity.Listener.WORKER_PORT, listen, workerToken != null, tls != null, insecure);
    } catch (ListenerSecurity.InsecureListenerException e) {
      throw new StartException(StartException.Reason.INSECURE_LISTENER, e.getMessage(), e);
    }
    WorkerServer.Settings serverSettings = workerServerSettings();
    DetectorSettings detectorSettings = detectorSettings();
    // A busy worker port is refused before the store is created or led. A standby binds it only when it
    // takes the lead, and could not take it from a port that is busy now either.
    try {
      dev.tally.coordinator.net.PortCheck.requireFree(listen);
    } catch (java.io.IOException e) {
      throw cannotListen(e);
    }
    CoordinatorLock lock = null;
    Store opened = store;
    Leadership leadership = null;
    Coordinator coordinator = null;
    try {
      if (storeLocation != null) {
        if (storeLocation instanceof StoreLocation.SqliteFile file && !standby) {
          lock = takeLock(file.file());
        }
        // earlier requests' key holds are released on taking the lead (Coordinator.lead)
        opened = openStore(storeLocation, storeOptions.withDurability(durability));
      }
      Clock clock = Clock.systemUTC();
      SchedulerLoop loop = new SchedulerLoop(clock);
      Scheduler.Builder schedulerBuilder = Scheduler.builder(opened, clock, Ticker.system(), new SplittableRandom())
          .redelivery(redelivery).settings(schedulerSettings).speculation(speculation).wakeup(loop::wake);
      observers.forEach(schedulerBuilder::observer);
      Scheduler scheduler = schedulerBuilder.build();
      Store storeForServer = opened;
      Coordinator.ServerStarter starter = epoch -> {
        try {
          return WorkerServer.start(listen, server.coordinatorEpoch(epoch).build(), scheduler, storeForServer.storeId());
        } catch (UncheckedIOException e) {
          throw cannotListen(e.getCause());
        }
      };
      Coordinator[] self = new Coordinator[1];
      leadership = new Leadership(opened, new dev.tally.core.lead.LeaderLease(java.util.UUID.randomUUID().toString(), leaderLease),
          () -> self[0].advertised(), Ticker.system());
      coordinator = new Coordinator(scheduler, loop, starter, listen, serverSettings, opened, clock, listen.getPort() == 0,
          detectorSettings, storeLocation != null ? opened : null, lock, tls, idempotencyTtl, keyHold, leadership,
          storeLocation != null);
      self[0] = coordinator;
      boolean leads = tryToLead(leadership, opened);
      if (leads) {
        try {
          coordinator.lead(leadership.epoch());
        } catch (StoreException e) {
          throw unusable(opened, e); // a full disk among others: the caller says it in one line
        }
      } else if (!standby) {
        dev.tally.core.lead.LeaderRow leader = leadership.lastSeen();
        throw new StartException(StartException.Reason.STORE_LED, "another coordinator leads "
            + (storeLocation != null ? storeLocation.describe() : opened) + " (epoch " + leader.epoch() + ", at " + leader.leaderAddress()
            + "); wait for it to stop, or run a tally server, which stands by until it does", null);
      } else {
        log.info("standing by: epoch {} leads the store at {}", leadership.lastSeen().epoch(), leadership.lastSeen().leaderAddress());
      }
      leadership.start(coordinator.leadershipListener());
      return coordinator;
    } catch (StartException | RuntimeException e) {
      if (leadership != null) {
        leadership.close();
      }
      if (storeLocation != null && opened != null) {
        opened.close();
      }
      closeQuietly(lock, e);
      throw e;
    }
  }

  /** The worker port cannot be bound, for {@code why}. */
  private StartException cannotListen(java.io.IOException why) {
    return new StartException(StartException.Reason.CANNOT_LISTEN, "cannot listen for workers on "
        + dev.tally.coordinator.net.PortCheck.text(listen.getHostString(), listen.getPort()) + ": " + why.getMessage(), why);
  }

  /**
   * Takes the lead if it can: at once for a standby (which goes on trying in the background); a coordinator
   * that may not stand by waits up to one lease and one retry for a leader that was just killed to lapse.
   */
  private boolean tryToLead(Leadership leadership, Store opened) throws StartException {
    // Up to two leases: a live row lapses within one, and a row that lapsed just before the first look gets
    // one more (LeaderLease: its leader may be reconnecting).
    long deadline = System.nanoTime() + leaderLease.lease().multipliedBy(2).plus(leaderLease.retryEvery()).toNanos();
    while (true) {
      try {
        // A database restarting as this coordinator starts: wait for it, as a running one does.
        if (storeLocation != null ? Stores.whileUnreachable(storeLocation, "taking the lead of", leadership::tryOnce)
            : leadership.tryOnce()) {
          return true;
        }
      } catch (StoreException e) {
        throw unusable(opened, e);
      }
      if (standby || System.nanoTime() >= deadline) {
        return false;
      }
      try {
        Thread.sleep(leaderLease.retryEvery().toMillis()); // a lease lapses by the clock: nothing to wait on
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  /** A store that failed while this coordinator was taking the lead, as the reason it could not start. */
  private StartException unusable(Store opened, StoreException e) {
    return startFailure(storeLocation, storeLocation != null ? storeLocation.describe() : String.valueOf(opened), e);
  }

  /**
   * A store's failure while this coordinator starts, as the reason it could not: a database out of reach
   * ({@link Stores#unreachable}, after {@link Stores#whileUnreachable} waited for it) is {@code
   * STORE_UNREACHABLE}, the machine's trouble; anything else {@code STORE_UNUSABLE}.
   *
   * @param location where the store is, or null for a store given as it is (never unreachable)
   * @param store the store in words, for the message
   */
  private static StartException startFailure(StoreLocation location, String store, StoreException e) {
    if (location != null && Stores.unreachable(location, e)) {
      return new StartException(StartException.Reason.STORE_UNREACHABLE, e.getMessage(), e);
    }
    return new StartException(StartException.Reason.STORE_UNUSABLE, store + " is not a usable Tally store: " + e.getMessage(), e);
  }

  private static CoordinatorLock takeLock(Path storeFile) throws StartException {
    CoordinatorLock lock;
    try {
      lock = CoordinatorLock.tryAcquire(storeFile);
    } catch (IOException e) {
      throw new StartException(StartException.Reason.LOCK_FAILED,
          "cannot take the coordinator lock " + CoordinatorLock.lockFile(storeFile) + ": " + e.getMessage(), e);
    }
    if (lock == null) {
      throw new StartException(StartException.Reason.STORE_LOCKED, "another coordinator is working on "
          + storeFile + " (it holds " + CoordinatorLock.lockFile(storeFile) + ")", null);
    }
    return lock;
  }

  private static Store openStore(StoreLocation location, Stores.Options options) throws StartException {
    try {
      // A database restarting as this coordinator starts: wait for it, as a running one does.
      return Stores.whileUnreachable(location, "opening", () -> Stores.open(location, options));
    } catch (StoreException e) {
      throw startFailure(location, location.describe(), e);
    }
  }

  private static void closeQuietly(CoordinatorLock lock, Exception failure) {
    if (lock == null) {
      return;
    }
    try {
      lock.close();
    } catch (IOException e) {
      failure.addSuppressed(e);
    }
  }

  /**
   * Why a coordinator could not start, with a message that names the store or address and what the
   * operating system or SQLite said.
   */
  public static final class StartException extends Exception {
    /** What stopped the start. */
    public enum Reason {
      /** Another coordinator holds the store's {@link CoordinatorLock}. */
      STORE_LOCKED,
      /**
       * Another coordinator leads the store (its leader lease held for a whole lease and a retry after this
       * one asked), and this one may not stand by ({@link #standby}).
       */
      STORE_LED,
      /** The lock file could not be created or locked (permissions, a missing directory, ...). */
      LOCK_FAILED,
      /** The store could not be opened, created or migrated (not a Tally store, a newer one, a full disk, ...). */
      STORE_UNUSABLE,
      /**
       * The database could not be reached (refused, cut, timed out) for {@code JdbcStore.RECONNECT_PATIENCE}
       * after this coordinator began to start: the machine's trouble, not the command's.
       */
      STORE_UNREACHABLE,
      /** The worker port could not be bound (in use, an address of another machine, ...). */
      CANNOT_LISTEN,
      /**
       * The worker port would listen on a non-loopback address without a token, and {@link #insecure} was
       * not given: the open-port rule ({@link ListenerSecurity}) refuses it. Nothing was opened.
       */
      INSECURE_LISTENER
    }

    private final Reason reason;

    StartException(Reason reason, String message, Throwable cause) {
      super(message, cause);
      this.reason = reason;
    }

    /** What stopped the start. */
    public Reason reason() {
      return reason;
    }
  }
}
