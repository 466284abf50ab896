package dev.tally.worker.eval;

import dev.tally.core.InfraFailure;
import dev.tally.core.security.Secret;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * {@code exec --serve}: the command is started once per slot, lazily at that slot's first case, and gets
 * one case per line on stdin (the case's JSON, as exec's stdin has it), answering each with one verdict
 * line on stdout (exec's grammar, {@link ExecEvaluator#parseVerdictLine}). So a scorer with a heavy
 * start-up (an interpreter, imports, a model loaded) pays it once per slot instead of once per case.
 *
 * <p>Per case: the answer's verdict line is the outcome (a line without {@code verdict} passes: there is no
 * exit code, and the outcome's is null); the lines the process printed before it for the case are its
 * stdout tail, and what it wrote to stderr meanwhile its stderr tail (each at most {@link
 * ExecEvaluator#OUTPUT_TAIL_LIMIT}). How stdout is read, and when the process is out of step, is {@link
 * ServedProcess}'s. A process that exits, closes its stdout, answers what is not a verdict line, or does
 * not answer within the case's timeout is killed (its whole process tree) and the case ends as exec's
 * would end in a crash or a timeout: a retryable failure ({@code EVALUATOR_CRASHED}, {@code SIGNALED} or
 * {@code TIMEOUT}), tried again as any, at least once and recorded once. The slot's next case starts a
 * fresh process. A cancelled attempt (an Abandon, a cancelled run, the worker stopping) kills the process.
 *
 * <p>The process is started as exec starts a case ({@link ExecEvaluator#launchCommand}: its own process
 * group under a supervisor, killed whole when the slot's thread or the worker dies) from the slot's own
 * long-lived thread, in the worker's working directory, without the worker's secrets, and with {@value
 * ExecEvaluator#RUN_ID_VARIABLE} only: the other {@code TALLY_*} variables describe one attempt, and the
 * process serves many (a command whose effects must be keyed per case reads the case's id from its line).
 * The template may have no placeholders: there is no one case to fill them from.
 *
 * <p>Limits: at most one served process per slot, whatever the run ({@link #PROCESSES}: a slot that turns to
 * another run's served command closes the one it had); a verdict line is at most exec's {@link
 * ExecEvaluator#VERDICT_LINE_LIMIT}; a process idle for {@link #IDLE_LIMIT} is closed.
 *
 * <p>Caveat: cases of one slot share a process, so a command that keeps state between cases lets a case see
 * the effects of the ones before it (and a retried case may meet a process that already saw it, or not).
 *
 * <p>Threading: one instance serves a run on every slot; each slot thread uses only its own process, so
 * the only shared state is {@link #PROCESSES} (a concurrent map keyed by the slot's thread) and the idle
 * reaper's thread, which closes a process only when it moves it from idle to closed.
 */
public final class ServeEvaluator implements Evaluator {
  /** The {@code exec} option that asks for a served command: {@code "true"}. */
  public static final String OPTION = "serve";

  /**
   * How long a served process may wait for its slot's next case before it is closed. The worker is not
   * told when a run ends, so this is what frees a finished run's scorers (and whatever memory they hold);
   * a busy slot's gap between cases is milliseconds (its next case is prefetched), so a minute costs a
   * running run nothing.
   */
  static final Duration IDLE_LIMIT = Duration.ofMinutes(1);

  /** Every slot's served process, by the slot's thread: at most one per slot. */
  private static final Map<Thread, ServedProcess> PROCESSES = new ConcurrentHashMap<>();

  /** Closes idle processes; one daemon thread for the JVM, started with the first served process. */
  private static final class Reaper {
    static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tally-serve-reaper");
      t.setDaemon(true);
      return t;
    });

    static {
      long periodNanos = IDLE_LIMIT.toNanos() / 4;
      TIMER.scheduleWithFixedDelay(Reaper::reap, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
    }

    static void start() {
      // Loading the class schedules the reaper.
    }

    private static void reap() {
      reapIdleSince(System.nanoTime() - IDLE_LIMIT.toNanos());
    }
  }

  /** Closes every served process idle since before {@code idleBeforeNanos} ({@link System#nanoTime}). */
  static void reapIdleSince(long idleBeforeNanos) {
    PROCESSES.forEach((slot, p) -> {
      if (p.closeIfIdleSince(idleBeforeNanos)) {
        PROCESSES.remove(slot, p);
      }
    });
  }

  private final List<String> command;

  /**
   * @param template the command; it must have no placeholders
   * @throws IllegalArgumentException if the template names a case field (the message names them)
   */
  ServeEvaluator(CommandTemplate template) {
    if (!template.fields().isEmpty()) {
      throw new IllegalArgumentException("exec --serve starts its command once for many cases, so cmd cannot use "
          + "case fields (it has {" + String.join("}, {", template.fields()) + "}); each case comes on the command's "
          + "stdin as one JSON line");
    }
    try {
      this.command = template.fill(CaseJson.MAPPER.createObjectNode());
    } catch (CommandTemplate.MissingFieldException e) {
      throw new IllegalStateException("a template without placeholders needs no field", e);
    }
  }

  /**
   * Whether {@code options} ask for a served command.
   *
   * @throws IllegalArgumentException if option {@value #OPTION} is there but neither {@code true} nor
   *     {@code false}
   */
  static boolean requested(Map<String, String> options) {
    String value = options.get(OPTION);
    if (value == null || value.equals("false")) {
      return false;
    }
    if (value.equals("true")) {
      return true;
    }
    throw new IllegalArgumentException("exec option " + OPTION + " must be true or false, got '" + value + "'");
  }

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    Thread slot = Thread.currentThread();
    ServedProcess p = PROCESSES.get(slot);
    if (p != null && (p.owner() != this || p.outOfStep() != null || !p.claim())) {
      p.close(); // another run's (at most one per slot), out of step, or closed by the reaper
      PROCESSES.remove(slot, p);
      p = null;
    }
    if (p == null) {
      Optional<String> executable = ExecEvaluator.resolveExecutable(command.get(0));
      if (executable.isEmpty()) {
        return Evaluation.error("command not found: " + command.get(0), ctx.elapsedMillis());
      }
      List<String> resolved = new ArrayList<>(command);
      resolved.set(0, executable.get());
      try {
        ProcessBuilder builder = new ProcessBuilder(ExecEvaluator.launchCommand(resolved));
        Map<String, String> environment = builder.environment();
        Secret.VARIABLES.forEach(environment::remove); // the command is not ours: it gets no token of ours
        environment.put(ExecEvaluator.RUN_ID_VARIABLE, Long.toString(ctx.attempt().runId()));
        p = ServedProcess.adopt(builder.start(), this, System.nanoTime());
      } catch (IOException e) {
        return Evaluation.error("cannot start " + command.get(0) + ": " + e.getMessage(), ctx.elapsedMillis());
      }
      Reaper.start();
      PROCESSES.put(slot, p);
    }
    ServedProcess served = p;
    Runnable unregister = ctx.onCancel(served::close);
    try {
      return served.serve(ctx);
    } catch (RuntimeException e) {
      served.close();
      return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, e.toString(), ctx.elapsedMillis());
    } finally {
      unregister.run();
      if (!served.release(System.nanoTime())) {
        PROCESSES.remove(slot, served);
      }
    }
  }

  /**
   * Closes the process the calling slot thread serves, if any: for a slot thread as it ends (its worker
   * stops), so that no served command outlives its slot. Safe to call from a thread that serves none.
   */
  public static void closeForCurrentSlot() {
    ServedProcess p = PROCESSES.remove(Thread.currentThread());
    if (p != null) {
      p.close();
    }
  }
}
