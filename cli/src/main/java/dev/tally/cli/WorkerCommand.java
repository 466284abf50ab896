package dev.tally.cli;

import dev.tally.coordinator.security.Secrets;
import dev.tally.coordinator.security.TlsFileException;
import dev.tally.coordinator.security.TlsTrust;
import dev.tally.core.security.Secret;
import dev.tally.protocol.ProtocolLimits;
import dev.tally.worker.Termination;
import dev.tally.worker.WorkerSession;
import dev.tally.worker.WorkerSettings;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import sun.misc.Signal;

/**
 * {@code tally worker --coordinator HOST:PORT}: a worker process. It connects (and reconnects, with
 * jittered backoff), runs the cases it is assigned, and heartbeats.
 *
 * <p>How it stops:
 *
 * <ul>
 *   <li>The first SIGTERM or SIGINT starts a graceful drain ({@link WorkerSession#drain()}): jobs not yet
 *       started are handed back at once, running cases get up to {@code --drain-timeout} to finish and
 *       deliver their results, then it says Goodbye and exits 0 (1 if the timeout cut cases short, or no
 *       coordinator was left to deliver to). A worker with nothing running and no coordinator connection
 *       exits at once.
 *   <li>A second SIGTERM or SIGINT stops at once: running cases are killed, and it exits with 128 + the
 *       signal's number, as an unhandled signal would.
 *   <li>{@code --give-up-after}: no Welcome for that long (from start, or from losing its coordinator)
 *       exits 1 with the reason.
 *   <li>Refused by the coordinator for a missing or wrong worker token, or for plaintext where it requires
 *       TLS ({@link Termination.Kind#REFUSED}): exits 3 at once instead of retrying for ever.
 *   <li>{@code --parent-pid} (used by {@code tally run} for its local workers): a line on stdin from that
 *       parent stops it at once, exit 0, with that line as the reason it says in its log and its Goodbye
 *       ("stopped by tally run: the run is over"); the parent disappearing stops it too.
 * </ul>
 *
 * <p>Signals are caught with {@code sun.misc.Signal} (module {@code jdk.unsupported}, kept available by
 * JEP 260 for this use): a shutdown hook cannot see a second signal, since the JVM ignores signals once
 * it is shutting down.
 */
@Command(name = "worker", mixinStandardHelpOptions = true, defaultValueProvider = ProductDefaults.class,
    description = "Run cases for a coordinator.")
public final class WorkerCommand implements Callable<Integer> {
  private static final Logger log = LoggerFactory.getLogger(WorkerCommand.class);

  /** {@code --slots} as given ({@link WorkerSettings#slots}), or a usage error naming the option. */
  static int slots(picocli.CommandLine commandLine, Integer asked) {
    try {
      return WorkerSettings.slots(asked);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(commandLine, "--slots " + e.getMessage());
    }
  }

  /** The signals that start a graceful drain, and a second time stop at once. */
  private static final String[] STOP_SIGNALS = {"TERM", "INT"};

  /** The conventional exit code of a process ended by a signal: 128 plus its number. */
  private static final int SIGNAL_EXIT_BASE = 128;

  @Spec CommandSpec spec;

  @Option(names = "--coordinator", required = true, converter = AddressList.HostPorts.Converter.class, paramLabel = "HOST:PORT[,HOST:PORT...]",
      description = "The coordinator's worker address, HOST:PORT; for several coordinators on one store, each of them,"
          + " comma-separated: the worker tries them in turn and works for the one that leads.")
  AddressList.HostPorts coordinatorList;

  /** The first address of --coordinator, and all of them. */
  private HostPort coordinator;
  private List<HostPort> coordinators;

  @Option(names = "--slots", description = "Cases run at once (default: the number of cores).", paramLabel = "N")
  Integer slots;

  @Option(names = "--name", description = "Name shown in results and status (default: HOSTNAME-PID).", paramLabel = "NAME")
  String name;

  @Option(names = "--drain-timeout", converter = DurationConverter.class,
      description = "On SIGTERM or SIGINT, how long running cases may take to finish and deliver their results"
          + " before they are stopped (default: ${DEFAULT-VALUE}; 0s hands back what is queued and stops at once)."
          + " A second signal stops at once.", paramLabel = "DURATION")
  Duration drainTimeout;

  @Option(names = "--give-up-after", converter = DurationConverter.class,
      description = "Exit (code 1) after this long without a coordinator taking this worker in (unreachable, or"
          + " not answering), counted from start or from losing the last one (default: never give up).", paramLabel = "DURATION")
  Duration giveUpAfter;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = "File holding the worker token the coordinator requires (one line; default: $"
          + Secret.WORKER_TOKEN_VARIABLE + ", else none). A coordinator that refuses it makes this worker exit with code 3.")
  Path tokenFile;

  @Option(names = "--tls-ca", paramLabel = "FILE",
      description = "Connect with TLS, trusting the CA certificates in this PEM file; the coordinator's certificate must"
          + " name the host of --coordinator.")
  Path tlsCa;

  /** The environment the token is read from when no file is given (a map in tests). */
  Map<String, String> environment = System.getenv();

  @Option(names = "--token-stdin", hidden = true,
      description = "Read the worker token from the first line of stdin (used by tally run and tally server for their"
          + " local workers: an environment variable would sit in /proc/PID/environ, where every case the worker runs"
          + " could read it).")
  boolean tokenStdin;

  /** The process's stdin, read by one reader: the token's line first (with --token-stdin), then the parent's word. */
  private BufferedReader stdin;

  @Option(names = "--stretch", hidden = true, paramLabel = "FACTOR",
      description = "Run every case FACTOR times slower (wait FACTOR - 1 times its time after it answers): a straggling"
          + " worker for benchmarks and tests (tally bench-stragglers).")
  Double stretch;

  @Option(names = "--parent-pid", hidden = true,
      description = "Exit when this process is gone, or when it writes why on stdin (used by tally run for its local workers).", paramLabel = "PID")
  Long parentPid;

  @Override
  public Integer call() throws Exception {
    int workerSlots = slots(spec.commandLine(), slots);
    if (name != null && (name.isBlank() || name.length() > ProtocolLimits.MAX_ID_CHARS)) {
      throw new ParameterException(spec.commandLine(), "--name must be 1 to " + ProtocolLimits.MAX_ID_CHARS
          + " characters (what a coordinator accepts), got " + name.length());
    }
    java.util.Optional<String> hidden = name == null ? java.util.Optional.empty() : dev.tally.core.HiddenCharacters.problem(name);
    if (hidden.isPresent()) {
      throw new ParameterException(spec.commandLine(), "--name " + hidden.get() + " (a coordinator refuses it)");
    }
    coordinators = coordinatorList.all();
    coordinator = coordinatorList.first();
    for (HostPort c : coordinators) {
      if (c.port() == 0) {
        throw new ParameterException(spec.commandLine(), "--coordinator needs a port other than 0, got " + c);
      }
    }
    if (drainTimeout.isNegative()) {
      throw new ParameterException(spec.commandLine(), "--drain-timeout must be 0s or more, got " + DurationConverter.text(drainTimeout));
    }
    if (giveUpAfter != null && (giveUpAfter.isZero() || giveUpAfter.isNegative())) {
      throw new ParameterException(spec.commandLine(), "--give-up-after must be positive, got " + DurationConverter.text(giveUpAfter));
    }
    Secret token;
    try {
      token = tokenStdin ? tokenFromStdin() : Secrets.workerToken(tokenFile, environment).orElse(null);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), (tokenStdin ? "--token-stdin: " : tokenFile != null ? "--token-file: " : "")
          + e.getMessage());
    }
    TlsTrust trust = null;
    if (tlsCa != null) {
      try {
        trust = TlsTrust.load(tlsCa);
      } catch (TlsFileException e) {
        throw new ParameterException(spec.commandLine(), "--tls-ca: " + e.getMessage());
      }
    }
    for (HostPort c : coordinators) {
      if (token != null && trust == null && !dev.tally.coordinator.security.ListenerSecurity.isLoopbackHost(c.host())) {
        log.warn("the worker token goes to {} in clear text (no --tls-ca): anyone on the path can read it", c);
      }
    }
    WorkerSettings.Builder settings = WorkerSettings.builder(coordinator.host(), coordinator.port())
        .coordinators(coordinators.stream().map(c -> new WorkerSettings.Address(c.host(), c.port())).toList())
        .slots(workerSlots).drainTimeout(drainTimeout).giveUpAfter(giveUpAfter).token(token)
        .tls(trust != null ? trust.nettyClientContext() : null);
    if (name != null) {
      settings.name(name);
    }
    if (stretch != null) {
      double factor = stretch;
      try {
        new dev.tally.worker.eval.StretchedEvaluator((ctx) -> null, factor); // the factor's rule, checked now
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "--stretch: " + e.getMessage());
      }
      settings.evaluatorFactory((kind, options) -> new dev.tally.worker.eval.StretchedEvaluator(
          dev.tally.worker.eval.EvaluatorFactory.create(kind, options), factor));
    }
    WorkerSettings built = settings.build();
    WorkerSession session = new WorkerSession(built);
    // Its log says nothing while all is well: one line tells whoever started it that it found its coordinator.
    PrintWriter err = spec.commandLine().getErr();
    session.joined().thenAccept(address -> {
      err.printf("tally worker: joined the coordinator at %s as %s, %s%n", address,
          built.name(), Words.count(built.slots(), "slot"));
      err.flush();
    });
    // Any other way out of the JVM (System.exit when the parent is gone, SIGHUP) stops at once.
    Runtime.getRuntime().addShutdownHook(new Thread(session::close, "tally-worker-stop"));
    ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tally-parent-watch");
      t.setDaemon(true);
      return t;
    });
    if (parentPid != null) {
      // A worker whose tally run died must not keep reconnecting forever: poll the parent every second.
      watchdog.scheduleAtFixedRate(() -> {
        Optional<ProcessHandle> parent = ProcessHandle.of(parentPid);
        if (parent.isEmpty() || !parent.get().isAlive()) {
          log.warn("parent process {} is gone; stopping", parentPid);
          System.exit(0);
        }
      }, 1, 1, TimeUnit.SECONDS);
    }
    session.start();
    if (parentPid != null) {
      listenToParent(session, err, stdin());
    }
    // After start(): a drain needs a started session. A signal before this point ends the JVM the
    // default way, through the shutdown hook.
    AtomicInteger signalExit = new AtomicInteger(-1);
    AtomicInteger signals = new AtomicInteger();
    for (String signal : STOP_SIGNALS) {
      Signal.handle(new Signal(signal), s -> onSignal(s, session, signals, signalExit));
    }
    session.awaitTermination();
    Termination how = session.termination();
    if (signalExit.get() >= 0) {
      return signalExit.get();
    }
    if (how != null && how.kind() == Termination.Kind.DRAINED) {
      // The other endings are logged as warnings or errors already, with this same detail.
      spec.commandLine().getErr().println("tally worker: " + how.detail());
    } else if (how != null && how.kind() == Termination.Kind.REFUSED) {
      // Logged as an error already; this says what the exit means, so that nobody restarts it as it is.
      spec.commandLine().getErr().println("tally worker: stopped (exit " + how.kind().exitCode() + ") rather than"
          + " retrying with a configuration the coordinator refuses; fix it and start the worker again");
    }
    return how == null ? 0 : how.kind().exitCode();
  }

  private BufferedReader stdin() {
    if (stdin == null) {
      stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    }
    return stdin;
  }

  /** The first line of stdin as the worker token ({@link Secret#of} judges it). */
  private Secret tokenFromStdin() {
    try {
      String line = stdin().readLine();
      if (line == null) {
        throw new IllegalArgumentException("stdin ended before the worker token's line");
      }
      return Secret.of(line, "worker token (from stdin)");
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the worker token from stdin: " + e.getMessage(), e);
    }
  }

  /**
   * Stops the worker at once when its parent writes a line on stdin, with that line as the reason: the
   * parent ({@code tally run}) knows why its workers stop (its run is over, or it is being stopped), and a
   * signal could not say. The end of stdin says nothing: the parent's pid is watched for its death.
   */
  private static void listenToParent(WorkerSession session, PrintWriter err, BufferedReader stdin) {
    Thread listener = new Thread(() -> {
      try {
        String why = stdin.readLine();
        if (why != null && !why.isBlank()) {
          err.println("tally worker: " + why.strip());
          err.flush();
          session.close(why.strip());
        }
      } catch (IOException e) {
        log.debug("cannot read stdin for the parent's word: {}", e.toString());
      }
    }, "tally-parent-word");
    listener.setDaemon(true);
    listener.start();
  }

  /** Runs on the JVM's signal thread: the first signal drains, the second stops at once. */
  private void onSignal(Signal signal, WorkerSession session, AtomicInteger signals, AtomicInteger signalExit) {
    if (signals.incrementAndGet() == 1) {
      log.warn("received SIG{}: draining (jobs not started are handed back; running cases get up to {} to finish);"
          + " send it again to stop at once", signal.getName(), DurationConverter.text(drainTimeout));
      session.drain();
    } else {
      log.warn("received SIG{} again: stopping at once", signal.getName());
      signalExit.set(SIGNAL_EXIT_BASE + signal.getNumber());
      session.close();
    }
  }
}
