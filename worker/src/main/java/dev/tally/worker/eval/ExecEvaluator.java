package dev.tally.worker.eval;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.security.Secret;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * {@code error} outcome naming it; a placeholder inside a shell's script is shell-quoted); the command is
 * started with the attempt's {@code TALLY_*} variables in its environment ({@link #caseEnvironment}: run,
 * case, job, attempt, fencing token and the case's idempotency key) and without the worker's tokens, the
 * case's JSON and a newline are written to its stdin, and stdin is closed. Exit 0 is {@code pass}, any other exit {@code fail}, unless the last
 * non-empty line of stdout is a JSON object with {@code "verdict"} ({@code pass}, {@code fail},
 * {@code error}) and/or {@code "score"} (a finite number) and/or {@code "answer"}: what it gives wins, and a bad value there (a
 * {@code "verdict": "maybe"}, a {@code "score": "NaN"}) makes the outcome {@code error}, quoting it
 * ({@link #parseVerdictLine}); the line's {@code "answer"} becomes the outcome's answer (what scorers judge)
 * and its other fields the outcome's fields. The outcome keeps the last characters of stdout and of stderr
 * apart (at most {@link #OUTPUT_TAIL_LIMIT} of each) and the exit code.
 *
 * <p>Endings that are not the case's own are retryable {@link InfraFailure}s: past the case timeout the
 * process tree is killed ({@code TIMEOUT}); a process killed by SIGKILL that the worker did not send
 * ({@code SIGNALED}: the kernel's out-of-memory killer, or a {@code kill -9} from outside; it may well run
 * on another worker). Java sees a process killed by signal N as exit value 128 + N, which a program can
 * also exit with on purpose, so only 137 (SIGKILL) is read as a signal: every other non-zero exit, 129..192
 * included, is the case's {@code fail} (a test that crashes with SIGSEGV or exits 130 failed; it must not
 * cost the fleet retries nor count against its worker). A command that cannot be started (not found, not
 * executable) is the case's own problem: an {@code error} outcome, recorded, not retried.
 *
 * <p><b>No orphans: every case runs in a process group of its own, killed whole.</b> On Linux, when
 * util-linux's {@code setpriv} and {@code setsid} exist, each case is started as
 * {@code setpriv --pdeathsig TERM -- /bin/sh -c SUPERVISOR tally-case <command...>}: a small POSIX
 * shell script (the <em>supervisor</em>, see {@link #SUPERVISOR_SCRIPT}) starts the command under
 * {@code setsid} (a new session, so a new process group whose id is the command's pid), hands it the
 * stdin Java writes the case to, waits for it, then SIGKILLs the whole group and exits with the command's
 * status. So the case's processes are killed together
 * <ol>
 *   <li>when the worker dies: the kernel sends SIGTERM to the supervisor when its parent dies
 *       ({@code kill -9} of the JVM included), and the supervisor's trap kills the group;
 *   <li>when the case's main process exits: anything it left running in the background is killed;
 *   <li>on a timeout or an Abandon ({@link #killTree}): SIGTERM to the supervisor (which kills the group),
 *       and SIGKILL to every descendant still attached to the tree.
 * </ol>
 * The command itself runs as its own program (the supervisor execs, through {@code setsid} and {@code
 * env}, into it), so {@code ps} shows it by name, and the supervisor shows as {@code sh -c ... tally-case
 * <command...>}. Java sees the supervisor's exit code, which is the command's: its exit status, or
 * 128 + the signal that killed it (what Java itself reports for a signaled child), so the SIGKILL
 * detection above is unchanged. Side effects of the group: the case has no controlling terminal, and its
 * SIGINT/SIGQUIT are reset to their default action (a shell ignores them in a background job; {@code env
 * --default-signal} undoes that, when coreutils is 8.31 or later).
 *
 * <p>Caution: the "parent" the kernel watches for {@code --pdeathsig} is the <em>thread</em> that forked
 * the supervisor, not the JVM process; if that thread ends, the case is killed even though the worker
 * lives. So {@link #evaluate} must only be called on long-lived threads (the worker's slot threads, a
 * fixed pool that never shrinks), never on a short-lived or pooled thread that may time out.
 *
 * <p>Limits: a process that moves itself out of the group ({@code setsid}, a daemon's double fork with a
 * new session) escapes the group kill, and so does everything if the supervisor itself is SIGKILLed
 * (say, by the OOM killer); full containment needs cgroups. Without {@code setsid} (or without {@code
 * /bin/sh}) cases run as {@code setpriv --pdeathsig KILL -- <command...>}: only the direct child dies
 * with the worker, a grandchild is re-parented to init and goes on. Without {@code setpriv} (not Linux)
 * the command is started as it is, and nothing dies with the worker. In both fallbacks a timeout or an
 * Abandon still kills the case's process and its descendants ({@link ProcessHandle#descendants()}).
 *
 * <p>Threading: stateless per case, safe to share between slot threads. Stdout and stderr are read by
 * two pump tasks, and stdin written by a third, on a shared cached pool of daemon threads, so a chatty
 * process or one that never reads its stdin cannot block the slot.
 */
public final class ExecEvaluator implements Evaluator {
  /** Characters of output kept per case, of stdout and of stderr each: the outcome's limit, {@link Outcome#OUTPUT_TAIL_LIMIT}. */
  public static final int OUTPUT_TAIL_LIMIT = Outcome.OUTPUT_TAIL_LIMIT;

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
  private static final Path SETSID = Path.of("/usr/bin/setsid");
  private static final Path SH = Path.of("/bin/sh");
  private static final Path ENV = Path.of("/usr/bin/env");

  /**
   * Why a case's command could not start, in the user's terms: the system's own words, except for a command
   * line too long for the system (E2BIG), which the JDK reports against the first program it runs (here
   * {@code setpriv}, which the user never wrote) and which says nothing of what to do.
   */
  static String startFailure(IOException e, List<String> args) {
    String message = String.valueOf(e.getMessage());
    if (message.contains("error=7,") || message.contains("Argument list too long")) {
      long chars = args.stream().mapToLong(a -> a.length() + 1).sum();
      long longest = args.stream().mapToLong(String::length).max().orElse(0);
      return "its command line is too long for the system (" + args.size() + " arguments, " + chars + " characters, the longest "
          + longest + "; Linux takes at most 128 KiB in one argument): pass large values on stdin, where the case's JSON is,"
          + " or in a file";
    }
    return message;
  }

  /** Whether cases run under {@code setpriv --pdeathsig} (Linux with util-linux). */
  static final boolean USE_SETPRIV = Files.isExecutable(SETPRIV);

  /** Whether cases run under the group-killing supervisor ({@link #SUPERVISOR_SCRIPT}). */
  static final boolean USE_SUPERVISOR = USE_SETPRIV && Files.isExecutable(SETSID) && Files.isExecutable(SH);

  /** The exit value Java reports for a process killed by SIGKILL (128 + 9): the one signal read as not the case's own. */
  static final int KILLED_BY_SIGKILL = 137;

  /** The variable holding the run's id, in the case's environment. */
  public static final String RUN_ID_VARIABLE = "TALLY_RUN_ID";
  /** The variable holding the case's {@code id}. */
  public static final String CASE_ID_VARIABLE = "TALLY_CASE_ID";
  /** The variable holding the job's id. */
  public static final String JOB_ID_VARIABLE = "TALLY_JOB_ID";
  /** The variable holding the attempt's number: 1 for the first, 2 for the first redelivery, ... */
  public static final String ATTEMPT_VARIABLE = "TALLY_ATTEMPT";
  /** The variable holding the attempt's fencing token: greater for every later attempt at the case. */
  public static final String FENCING_TOKEN_VARIABLE = "TALLY_FENCING_TOKEN";
  /**
   * The variable holding the case's idempotency key ({@link dev.tally.core.EffectKey}): the same for every
   * attempt of the case, different for every other case and run. A receiver of the case's effects that
   * stores it with each effect, in the same transaction, performs each effect once.
   */
  public static final String IDEMPOTENCY_KEY_VARIABLE = "TALLY_IDEMPOTENCY_KEY";

  /** {@code $0} of the supervisor shell: how it shows in {@code ps} and in its own error messages. */
  static final String SUPERVISOR_NAME = "tally-case";

  /**
   * The supervisor, run as {@code sh -c SCRIPT tally-case <command...>} under {@code setpriv --pdeathsig
   * TERM}; {@code %s} becomes {@code /usr/bin/setsid /usr/bin/env --default-signal=INT,QUIT}, or just
   * {@code /usr/bin/setsid} where {@code env} lacks that option. POSIX sh (dash here), line by line:
   *
   * <ul>
   *   <li>{@code trap}s: on TERM (the worker died, or {@link #killTree}), HUP or INT, SIGKILL the case's
   *       group and its main process, and exit with 128 + the signal. A trapped signal interrupts {@code
   *       wait} at once. The group id is the command's pid ({@code $!}); killing the pid too covers the
   *       instant between the fork and {@code setsid}. {@code kill -s KILL -- -PGID} is the spelling dash
   *       accepts ({@code kill -KILL -- -PGID} is "Illegal number" there).
   *   <li>{@code exec 3<&0} / {@code 0<&3 3<&-}: without job control, POSIX gives a background command
   *       {@code /dev/null} as its stdin; the case's JSON is on the supervisor's stdin, so the command gets
   *       a copy of it through fd 3 (explicit redirections come after that {@code /dev/null}). The
   *       supervisor then drops its own copies, so a command that closes its stdin early makes Java's write
   *       fail as before instead of filling the pipe; it drops its copies of stdout and stderr too, so that
   *       the command closing its stdout is seen as the pipe's end (what {@code exec --serve} watches for). ({@code set -m} would give the job its own group, but
   *       a non-interactive dash with no terminal refuses it: "can't access tty; job control turned off".)
   *   <li>{@code setsid ... &}: {@code setsid} is not a group leader here (a background child of a shell
   *       without job control), so it calls {@code setsid()} and execs in place: {@code $!} is the command's
   *       pid, its session id and its group id. {@code env --default-signal=INT,QUIT} undoes the shell's
   *       ignoring of SIGINT and SIGQUIT in background commands (dash marks them "hard ignored": {@code
   *       trap - INT} cannot).
   *   <li>{@code wait "$!"} returns the command's exit status, or 128 + the signal that killed it; the group
   *       is then killed (leftover background processes) and that status is the supervisor's.
   * </ul>
   */
  static final String SUPERVISOR_SCRIPT =
      "trap 'kill -s KILL -- \"-$!\" \"$!\" 2>/dev/null; exit 143' TERM\n"
          + "trap 'kill -s KILL -- \"-$!\" \"$!\" 2>/dev/null; exit 129' HUP\n"
          + "trap 'kill -s KILL -- \"-$!\" \"$!\" 2>/dev/null; exit 130' INT\n"
          + "exec 3<&0\n"
          + "%s \"$@\" 0<&3 3<&- &\n"
          + "exec 0</dev/null 1>/dev/null 2>&1 3<&-\n"
          + "wait \"$!\"\n"
          + "s=$?\n"
          + "kill -s KILL -- \"-$!\" 2>/dev/null\n"
          + "exit \"$s\"\n";

  /** The supervisor script as run here (built once, on first use: it probes {@code env}). */
  private static final class Supervisor {
    static final String SCRIPT = SUPERVISOR_SCRIPT.formatted(starter());

    private static String starter() {
      String setsid = SETSID.toString();
      return envResetsSignals() ? setsid + " " + ENV + " --default-signal=INT,QUIT" : setsid;
    }

    /** Whether {@code env --default-signal} works (coreutils 8.31+); one short process, once. */
    private static boolean envResetsSignals() {
      if (!Files.isExecutable(ENV)) {
        return false;
      }
      try {
        Process p =
            new ProcessBuilder(ENV.toString(), "--default-signal=INT,QUIT", "true")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        p.getOutputStream().close();
        return p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0;
      } catch (IOException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

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
      ProcessBuilder builder = new ProcessBuilder(launchCommand(command));
      Map<String, String> environment = builder.environment();
      Secret.VARIABLES.forEach(environment::remove); // the case's code is not ours: it gets no token of ours
      environment.putAll(caseEnvironment(ctx.attempt()));
      process = builder.start();
    } catch (IOException e) {
      return Evaluation.error("cannot start " + args.get(0) + ": " + startFailure(e, args), ctx.elapsedMillis());
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
      reap(process, KILL_WAIT);
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
    String stdout = out.tail();
    String stderr = err.tail();
    // Only a failure's detail mixes the two (it has one text); an outcome keeps them apart.
    String tail = OutputCapture.joinTails(stdout, stderr, OUTPUT_TAIL_LIMIT);
    if (exit == KILLED_BY_SIGKILL) {
      return Evaluation.failed(
          InfraFailure.Kind.SIGNALED,
          "killed by signal 9, SIGKILL (exit value " + exit + "): the out-of-memory killer, or a kill -9 from outside"
              + (tail.isEmpty() ? "; no output" : "; output tail: " + lastChars(tail, 200)),
          durationMillis);
    }
    Verdict verdict = exit == 0 ? Verdict.PASS : Verdict.FAIL;
    if (out.lastLineIsAnOverlongObject()) {
      // Reading it as "no verdict line" could turn a fail into a pass: say so instead.
      String message = "the last line of stdout starts like a verdict object but is longer than the "
          + VERDICT_LINE_LIMIT / 1024 + " KiB verdict line limit, so it was not read; stdout tail:\n";
      return error(message, stdout, exit, stderr, durationMillis);
    }
    VerdictLine line = parseVerdictLine(out.lastNonEmptyLine());
    if (line == null) {
      return new Evaluation.Finished(new Outcome(verdict, null, stdout, durationMillis, null, null, exit, stderr));
    }
    if (line.problem() != null) {
      String message = "malformed verdict line (the last line of stdout): " + line.problem() + "; stdout tail:\n";
      return error(message, stdout, exit, stderr, durationMillis);
    }
    return new Evaluation.Finished(new Outcome(line.verdict() != null ? line.verdict() : verdict, line.score(), stdout,
        durationMillis, line.answer(), line.fieldsJson(), exit, stderr));
  }

  /** An {@code error} outcome the evaluator made: its message, then as much of stdout's tail as fits. */
  private static Evaluation error(String message, String stdout, int exit, String stderr, long durationMillis) {
    String output = message + lastChars(stdout, Math.max(0, OUTPUT_TAIL_LIMIT - message.length() - 3));
    return new Evaluation.Finished(new Outcome(Verdict.ERROR, null, output, durationMillis, null, null, exit, stderr));
  }

  /**
   * A last stdout line that is a JSON object with {@code verdict} and/or {@code score}: what it gives
   * (null where it gives nothing), or, if a value is unusable, why ({@code problem} non-null).
   *
   * @param answer its {@code "answer"}: a string as it is, any other JSON value as its JSON text; null if absent
   * @param fieldsJson its other fields (besides verdict, score and answer) as one JSON object's text; null if none
   */
  record VerdictLine(Verdict verdict, Double score, String answer, String fieldsJson, String problem) {
    VerdictLine(Verdict verdict, Double score, String problem) {
      this(verdict, score, null, null, problem);
    }
  }

  /** The fields of a verdict line that are not kept among its other fields. */
  private static final java.util.Set<String> VERDICT_LINE_OWN_FIELDS = java.util.Set.of("verdict", "score", "answer");

  /**
   * The verdict line's parser: also reads {@code NaN} and {@code Infinity}, to reject them by name, and
   * refuses anything after the object (a line holding two objects is not a verdict line: which would win?).
   */
  private static final ObjectReader VERDICT_READER = CaseJson.MAPPER.reader()
      .with(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
      .with(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /**
   * Reads the last line of stdout as a verdict line. Null if it is not a JSON object, or is one with
   * none of {@code verdict}, {@code score} and {@code answer}: ordinary output, the exit code decides. Otherwise the
   * object wins, so it must be right: a {@code verdict} that is not {@code pass}, {@code fail} or {@code
   * error} (any case), or a {@code score} that is not a finite number ({@code "NaN"}, {@code NaN}, {@code
   * null}, {@code 1e999}), is a {@link VerdictLine#problem} quoting the bad value: the evaluator's output
   * is malformed and the case's verdict cannot be trusted.
   */
  static VerdictLine parseVerdictLine(String line) {
    if (line == null || !line.strip().startsWith("{")) {
      return null;
    }
    JsonNode node;
    try {
      node = VERDICT_READER.readTree(line);
    } catch (IOException e) {
      return null;
    }
    if (node == null || !node.isObject() || (!node.has("verdict") && !node.has("score") && !node.has("answer"))) {
      return null;
    }
    List<String> problems = new ArrayList<>(2);
    Verdict verdict = null;
    JsonNode v = node.get("verdict");
    if (v != null) {
      try {
        if (!v.isTextual()) {
          throw new IllegalArgumentException("not a string");
        }
        verdict = Verdict.parse(v.textValue());
      } catch (IllegalArgumentException e) {
        problems.add("\"verdict\": " + quote(v) + " is not pass, fail or error");
      }
    }
    Double score = null;
    JsonNode s = node.get("score");
    if (s != null) {
      if (s.isNumber() && Double.isFinite(s.doubleValue())) {
        score = s.doubleValue();
      } else {
        problems.add("\"score\": " + quote(s) + " is not a finite number");
      }
    }
    if (!problems.isEmpty()) {
      return new VerdictLine(null, null, String.join("; ", problems));
    }
    JsonNode a = node.get("answer");
    String answer = a == null || a.isNull() ? null : a.isTextual() ? a.textValue() : a.toString();
    com.fasterxml.jackson.databind.node.ObjectNode rest = ((com.fasterxml.jackson.databind.node.ObjectNode) node).deepCopy();
    rest.remove(VERDICT_LINE_OWN_FIELDS);
    return new VerdictLine(verdict, score, answer, rest.isEmpty() ? null : rest.toString(), null);
  }

  /** A JSON value as written (at most 100 characters), for a message. */
  private static String quote(JsonNode value) {
    String text = value.isNumber() && !Double.isFinite(value.doubleValue()) ? value.asText() : value.toString();
    return text.length() <= 100 ? text : text.substring(0, 100) + "...";
  }

  /**
   * The {@code TALLY_*} variables a case's process gets, describing its attempt: {@value #RUN_ID_VARIABLE},
   * {@value #CASE_ID_VARIABLE}, {@value #JOB_ID_VARIABLE}, {@value #ATTEMPT_VARIABLE}, {@value
   * #FENCING_TOKEN_VARIABLE} and {@value #IDEMPOTENCY_KEY_VARIABLE}. Besides them the process inherits the
   * worker's environment, less the variables that carry Tally's secrets ({@link Secret#VARIABLES}).
   */
  public static Map<String, String> caseEnvironment(CaseAttempt attempt) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put(RUN_ID_VARIABLE, Long.toString(attempt.runId()));
    env.put(CASE_ID_VARIABLE, attempt.caseId());
    env.put(JOB_ID_VARIABLE, Long.toString(attempt.jobId()));
    env.put(ATTEMPT_VARIABLE, Integer.toString(attempt.attempt()));
    env.put(FENCING_TOKEN_VARIABLE, Long.toUnsignedString(attempt.fencingToken()));
    env.put(IDEMPOTENCY_KEY_VARIABLE, attempt.idempotencyKey());
    return env;
  }

  /**
   * The command actually started: under the supervisor when available, else under {@code setpriv
   * --pdeathsig KILL}, else as it is (see the class comment).
   */
  static List<String> launchCommand(List<String> command) {
    if (!USE_SETPRIV) {
      return command;
    }
    List<String> wrapped = new ArrayList<>(command.size() + 8);
    wrapped.add(SETPRIV.toString());
    wrapped.add("--pdeathsig");
    if (USE_SUPERVISOR) {
      wrapped.add("TERM");
      wrapped.add("--");
      wrapped.add(SH.toString());
      wrapped.add("-c");
      wrapped.add(Supervisor.SCRIPT);
      wrapped.add(SUPERVISOR_NAME);
    } else {
      wrapped.add("KILL");
      wrapped.add("--");
    }
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
   * Kills a case: SIGTERM to the supervisor, whose trap SIGKILLs the case's process group (reaching
   * processes re-parented to init), then SIGKILL to every descendant still in the tree, and, without a
   * supervisor, SIGKILL to the process itself. The supervisor is left to exit on its own (killing it at
   * once could beat its trap to it); {@link #reap} finishes it off if it does not. Does not wait. Safe to
   * call more than once and from any thread.
   */
  static void killTree(Process process) {
    if (USE_SUPERVISOR) {
      process.destroy();
    }
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    if (!USE_SUPERVISOR) {
      process.destroyForcibly();
    }
  }

  /** Waits up to {@code max} for a killed case's process to end, then SIGKILLs it if it has not. */
  private static void reap(Process process, Duration max) {
    waitQuietly(process, max);
    if (process.isAlive()) {
      process.destroyForcibly();
    }
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
