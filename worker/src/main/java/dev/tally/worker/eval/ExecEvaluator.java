package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.Verdict;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code exec}: runs one command per case; its exit code, or a JSON verdict line, is the outcome.
 *
 * <p>Per case: the {@link CommandTemplate} is filled from the case's fields (a missing field is an
 * {@code error} outcome naming it); the command is started, the case's JSON and a newline are written to
 * its stdin, and stdin is closed. Exit 0 is {@code pass}, any other exit {@code fail}, unless the last
 * non-empty line of stdout is a JSON object with {@code "verdict"} ({@code pass}, {@code fail},
 * {@code error}) and/or {@code "score"} (a number): what it gives wins. The outcome's output tail is the
 * last characters of stdout then stderr, at most {@link #OUTPUT_TAIL_LIMIT} in all.
 *
 * <p>Endings that are not the case's own are retryable {@link InfraFailure}s: past the case timeout the
 * process tree is killed ({@code TIMEOUT}); a process killed by a signal the worker did not send
 * ({@code SIGNALED}, seen by Java on Linux as an exit value of 128 + the signal, 129..192; a program that
 * exits with such a code on purpose is taken for signaled too). A command that cannot be started (not
 * found, not executable) is the case's own problem: an {@code error} outcome, recorded, not retried.
 *
 * <p><b>No orphans when the worker dies.</b> On Linux, when {@code /usr/bin/setpriv} exists, each case runs
 * as {@code setpriv --pdeathsig KILL -- <command...>}: the kernel sends SIGKILL to the case's process when
 * its parent dies, so a worker killed with {@code kill -9} leaves no case running. Caution: the "parent" the
 * kernel watches is the <em>thread</em> that forked the child, not the JVM process; if that thread ends,
 * the case is killed even though the worker lives. So {@link #evaluate} must only be called on long-lived
 * threads (the worker's slot threads, a fixed pool that never shrinks), never on a short-lived or pooled
 * thread that may time out. Only the direct child is covered: its own children are killed with it on a
 * timeout or an Abandon ({@link ProcessHandle#descendants()} first, then the process), but a grandchild
 * that outlives the case's process, or one that daemonizes, escapes; full containment needs cgroups.
 *
 * <p>Threading: stateless per case, safe to share between slot threads. Stdout and stderr are read by
 * two pump tasks, and stdin written by a third, on a shared cached pool of daemon threads, so a chatty
 * process or one that never reads its stdin cannot block the slot.
 */
public final class ExecEvaluator implements Evaluator {
  /**
   * Characters of output kept per case (stdout then stderr). The tail rides in every Result frame, waits
   * in the worker's outbox until acked and is stored with every job; 4 KiB holds the end of a typical
   * traceback or test report while keeping a full outbox and a million-job run's store small.
   */
  public static final int OUTPUT_TAIL_LIMIT = 4096;

  /**
   * Longest stdout line considered as a JSON verdict line. A verdict object is a few dozen characters;
   * the limit bounds the memory spent on a process that writes one endless line.
   */
  static final int VERDICT_LINE_LIMIT = 64 * 1024;

  /**
   * How long the slot waits, after the process exited, for the pumps to reach the end of its output. A
   * grandchild that inherited stdout can hold the pipe open forever; past this the outcome is reported
   * with the output read so far, and the pump finishes on its own.
   */
  static final Duration PUMP_GRACE = Duration.ofMillis(500);

  /** How long to wait for a killed process to be reaped before reporting anyway. */
  static final Duration KILL_WAIT = Duration.ofSeconds(5);

  private static final Path SETPRIV = Path.of("/usr/bin/setpriv");

  /** Whether cases run under {@code setpriv --pdeathsig KILL} (Linux with util-linux). */
  static final boolean USE_SETPRIV = Files.isExecutable(SETPRIV);

  private static final ExecutorService PUMPS = Executors.newCachedThreadPool(daemonThreads("tally-exec-io-"));

  private final CommandTemplate template;

  ExecEvaluator(CommandTemplate template) {
    this.template = template;
  }

  @Override
  public Evaluation evaluate(EvalContext ctx) {
    List<String> args;
    try {
      args = template.fill(CaseJson.parseObject(ctx.caseJson()));
    } catch (CommandTemplate.MissingFieldException | IllegalArgumentException e) {
      return Evaluation.error(e.getMessage(), ctx.elapsedMillis());
    }
    Optional<String> executable = resolveExecutable(args.get(0));
    if (executable.isEmpty()) {
      return Evaluation.error("command not found: " + args.get(0), ctx.elapsedMillis());
    }
    List<String> command = new ArrayList<>(args);
    command.set(0, executable.get());
    Process process;
    try {
      process = new ProcessBuilder(launchCommand(command)).start();
    } catch (IOException e) {
      return Evaluation.error("cannot start " + args.get(0) + ": " + e.getMessage(), ctx.elapsedMillis());
    }
    Runnable unregister = ctx.onCancel(() -> killTree(process));
    try {
      return await(ctx, process);
    } finally {
      unregister.run();
    }
  }

  private Evaluation await(EvalContext ctx, Process process) {
    OutputCapture out = new OutputCapture(OUTPUT_TAIL_LIMIT, VERDICT_LINE_LIMIT);
    OutputCapture err = new OutputCapture(OUTPUT_TAIL_LIMIT, 0);
    byte[] input = (ctx.caseJson() + "\n").getBytes(StandardCharsets.UTF_8);
    PUMPS.execute(() -> feed(process.getOutputStream(), input));
    Future<?> outPump = PUMPS.submit(() -> pump(process.getInputStream(), out));
    Future<?> errPump = PUMPS.submit(() -> pump(process.getErrorStream(), err));

    long remainingNanos = ctx.timeout().toNanos() - TimeUnit.MILLISECONDS.toNanos(ctx.elapsedMillis());
    boolean exited;
    try {
      exited = process.waitFor(Math.max(0, remainingNanos), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      killTree(process);
      return Evaluation.failed(
          InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted while waiting for the case", ctx.elapsedMillis());
    }
    if (!exited) {
      killTree(process);
      waitQuietly(process, KILL_WAIT);
      return Evaluation.failed(
          InfraFailure.Kind.TIMEOUT,
          "ran past the case timeout of " + ctx.timeout().toMillis() + " ms; its process tree was killed",
          ctx.elapsedMillis());
    }
    if (ctx.cancelled()) {
      return Evaluation.failed(
          InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled: " + ctx.cancelReason(), ctx.elapsedMillis());
    }
    long durationMillis = ctx.elapsedMillis();
    awaitPump(outPump);
    awaitPump(errPump);
    int exit = process.exitValue();
    String tail = OutputCapture.joinTails(out.tail(), err.tail(), OUTPUT_TAIL_LIMIT);
    if (exit > 128 && exit <= 128 + 64) {
      return Evaluation.failed(
          InfraFailure.Kind.SIGNALED,
          "killed by signal " + (exit - 128) + " (exit value " + exit + "); output tail: " + lastChars(tail, 200),
          durationMillis);
    }
    Verdict verdict = exit == 0 ? Verdict.PASS : Verdict.FAIL;
    Double score = null;
    JsonNode verdictLine = parseVerdictLine(out.lastNonEmptyLine());
    if (verdictLine != null) {
      JsonNode v = verdictLine.get("verdict");
      if (v != null && v.isTextual()) {
        verdict = Verdict.parse(v.textValue());
      }
      JsonNode s = verdictLine.get("score");
      if (s != null && s.isNumber()) {
        score = s.doubleValue();
      }
    }
    return Evaluation.finished(verdict, score, tail, durationMillis);
  }

  /**
   * The JSON verdict object on the last line, or null if the line is not a JSON object with a valid
   * {@code verdict} and/or a numeric {@code score}. A line that is not such an object is ordinary output.
   */
  static JsonNode parseVerdictLine(String line) {
    if (line == null || !line.strip().startsWith("{")) {
      return null;
    }
    JsonNode node;
    try {
      node = CaseJson.MAPPER.readTree(line);
    } catch (IOException e) {
      return null;
    }
    if (node == null || !node.isObject()) {
      return null;
    }
    JsonNode v = node.get("verdict");
    boolean validVerdict = false;
    if (v != null && v.isTextual()) {
      try {
        Verdict.parse(v.textValue());
        validVerdict = true;
      } catch (IllegalArgumentException e) {
        return null; // "verdict": "passed" is a typo, not a verdict: the exit code decides
      }
    }
    JsonNode s = node.get("score");
    boolean validScore = s != null && s.isNumber();
    return validVerdict || validScore ? node : null;
  }

  /** The command actually started: under {@code setpriv --pdeathsig KILL} when available. */
  static List<String> launchCommand(List<String> command) {
    if (!USE_SETPRIV) {
      return command;
    }
    List<String> wrapped = new ArrayList<>(command.size() + 4);
    wrapped.add(SETPRIV.toString());
    wrapped.add("--pdeathsig");
    wrapped.add("KILL");
    wrapped.add("--");
    wrapped.addAll(command);
    return wrapped;
  }

  /**
   * Finds the executable the way a shell would ({@code PATH} for a bare name), so that "not found" is
   * seen here: under setpriv the JVM would start setpriv fine and only setpriv would fail.
   */
  static Optional<String> resolveExecutable(String name) {
    if (name.isEmpty()) {
      return Optional.empty();
    }
    if (name.contains("/")) {
      Path p = Path.of(name);
      return Files.isRegularFile(p) && Files.isExecutable(p) ? Optional.of(name) : Optional.empty();
    }
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    for (String dir : path.split(File.pathSeparator, -1)) {
      Path candidate = Path.of(dir.isEmpty() ? "." : dir).resolve(name);
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return Optional.of(candidate.toAbsolutePath().toString());
      }
    }
    return Optional.empty();
  }

  /**
   * Kills a case's process and its descendants with SIGKILL, descendants first so that none is
   * re-parented out of reach. Does not wait. Safe to call more than once and from any thread.
   */
  static void killTree(Process process) {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
  }

  private static void feed(OutputStream stdin, byte[] input) {
    try (stdin) {
      stdin.write(input);
    } catch (IOException e) {
      // The process exited or closed its stdin without reading it all: its choice, not an error.
    }
  }

  private static void pump(InputStream stream, OutputCapture capture) {
    char[] buf = new char[8192];
    try (Reader reader = new InputStreamReader(stream, StandardCharsets.UTF_8)) {
      int n;
      while ((n = reader.read(buf)) != -1) {
        capture.append(buf, 0, n);
      }
    } catch (IOException e) {
      // The stream was closed under us (the process was killed); keep what was read.
    } finally {
      capture.finish();
    }
  }

  private static void awaitPump(Future<?> pump) {
    try {
      pump.get(PUMP_GRACE.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      // A grandchild holds the pipe open; report with the output read so far.
    } catch (ExecutionException e) {
      // pump() catches its own I/O errors; nothing else can fail there.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void waitQuietly(Process process, Duration max) {
    try {
      process.waitFor(max.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static String lastChars(String s, int n) {
    return s.length() <= n ? s : "..." + s.substring(s.length() - n);
  }

  private static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
