package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.InfraFailure;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One command started by {@code exec --serve} ({@link ServeEvaluator}) for one slot: it gets a case per
 * line on stdin and answers each with one verdict line on stdout.
 *
 * <p><b>Reading stdout.</b> A pump splits stdout into lines. A line that starts (after blanks) with
 * {@code '{'} is the answer to the case in hand: it must be a verdict line as exec reads one ({@link
 * ExecEvaluator#parseVerdictLine}, at most {@link ExecEvaluator#VERDICT_LINE_LIMIT} characters), else the
 * process has <em>answered something that is not a verdict line</em> and is out of step for good. Every
 * other line is the case's output: it goes to the case's stdout tail (the answer's own line does not).
 * Stderr goes to the case's stderr tail as it is read: stdout and stderr are two pipes read by two
 * threads, so a line written to stderr just before the answer may be read after it, and then belongs to
 * the next case's tail. Output written between two cases belongs to the next one. A
 * verdict line that comes while no case is in hand (a second answer to one case) also puts the process out
 * of step: it would otherwise be read as the next case's answer.
 *
 * <p><b>Lifecycle.</b> {@code IDLE -> BUSY -> IDLE ...}, and {@code CLOSED} from either, once: the slot
 * claims it for a case ({@link #claim}) and releases it after ({@link #release}); an idle reaper may close
 * it only while {@code IDLE}, and a slot's end, a failed case or a cancel close it whatever its state.
 * Closing kills the process tree ({@link ExecEvaluator#killTree}); a closed process is never used again.
 *
 * <p>Threading: {@link #serve} runs on the slot thread that started the process (and only there: its
 * {@code --pdeathsig} parent is that thread, see {@link ExecEvaluator}); the stdout and stderr pumps and
 * the stdin writer run on a shared pool of daemon threads; {@link #close} and {@link #kill} are safe from
 * any thread. The output state is guarded by one lock, whose condition wakes the slot when an answer, an
 * error or the end of stdout comes.
 */
final class ServedProcess {
  private enum State {
    IDLE,
    BUSY,
    CLOSED
  }

  /**
   * The field of a verdict line that, when given, must be the case's id: a check that the answer is this
   * case's (a process that answered an earlier case twice is out of step). Taken out of the outcome's fields.
   */
  static final String ID_FIELD = "id";

  /** Pumps and stdin writers, one of each per stream of each served process while it lives. */
  private static final ExecutorService IO = Executors.newCachedThreadPool(daemonThreads("tally-serve-io-"));

  /**
   * How long a case waits for the last case's line to be all written before it calls the process out of
   * step. The write ends when the process has read the line; but the thread that wrote it may not have run
   * again yet when the answer is in and the next case starts (on a loaded machine it was not, and a
   * process that had read everything was killed as one that had not: {@code ServeProcessTest} saw a fifth
   * served process). A process that truly left part of a line unread keeps the write waiting past this.
   */
  static final Duration FEED_GRACE = Duration.ofSeconds(1);

  private final Process process;
  private final Object owner;
  private final AtomicReference<State> state = new AtomicReference<>(State.BUSY);
  private volatile long idleSinceNanos;

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  /** Guarded by {@link #lock}: the output of the case in hand (or of the next one, between cases). */
  private OutputCapture out = tailOnly();
  private OutputCapture err = tailOnly();
  private final StringBuilder line = new StringBuilder();
  private boolean lineOverflow;
  private boolean overflowStartedWithBrace;
  private boolean awaiting;
  private ExecEvaluator.VerdictLine answer;
  private String answeredStdout;
  /** Why the process is out of step (null while it is not): it is never sent another case. */
  private String outOfStep;
  private boolean stdoutEnded;

  /** The write of the last case's line; the next one waits for it (lines must not interleave). */
  private Future<?> feeding;

  private ServedProcess(Process process, Object owner, long nowNanos) {
    this.process = process;
    this.owner = owner;
    this.idleSinceNanos = nowNanos;
  }

  /**
   * Takes over a started process: starts its pumps. The process is {@code BUSY}, in the hands of the slot
   * that started it.
   *
   * @param owner the evaluator it serves (a slot's process is reused only by the same evaluator)
   */
  static ServedProcess adopt(Process process, Object owner, long nowNanos) {
    ServedProcess p = new ServedProcess(process, owner, nowNanos);
    IO.execute(p::pumpStdout);
    IO.execute(p::pumpStderr);
    return p;
  }

  Object owner() {
    return owner;
  }

  long pid() {
    return process.pid();
  }

  /** Moves {@code IDLE -> BUSY} for the slot's next case; false if it was closed (by the idle reaper). */
  boolean claim() {
    return state.compareAndSet(State.IDLE, State.BUSY);
  }

  /** Moves {@code BUSY -> IDLE} after a case, from {@code nowNanos}; false if it was closed meanwhile. */
  boolean release(long nowNanos) {
    idleSinceNanos = nowNanos;
    return state.compareAndSet(State.BUSY, State.IDLE);
  }

  /** Closes it if it has been idle since before {@code idleBeforeNanos}; true if this call closed it. */
  boolean closeIfIdleSince(long idleBeforeNanos) {
    if (idleSinceNanos - idleBeforeNanos < 0 && state.compareAndSet(State.IDLE, State.CLOSED)) {
      kill();
      return true;
    }
    return false;
  }

  /** Closes it (kills its tree), whatever its state. Idempotent; does not wait. */
  void close() {
    state.set(State.CLOSED);
    kill();
  }

  boolean closed() {
    return state.get() == State.CLOSED;
  }

  /**
   * Kills its process tree ({@link ExecEvaluator#killTree}) and wakes a slot waiting for its answer (which
   * then sees a cancel or the end of stdout); does not wait. Safe from any thread.
   */
  void kill() {
    ExecEvaluator.killTree(process);
    lock.lock();
    try {
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Why the process must not get another case (it answered out of turn, or what is not a verdict line, or
   * ended its stdout), or null if it may.
   */
  String outOfStep() {
    lock.lock();
    try {
      return outOfStep != null ? outOfStep : stdoutEnded ? "it closed its stdout" : null;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Sends one case and waits for its answer, at most until the case's timeout. On anything but an answer
   * the process is closed (killed) before this returns, so the slot's next case starts a fresh one.
   *
   * @return the case's outcome (its verdict line's, or {@code error} for a verdict line with a bad value,
   *     as exec), or a retryable failure: {@code TIMEOUT}, {@code SIGNALED} (the process was killed by a
   *     SIGKILL the worker did not send), {@code EVALUATOR_CRASHED} (it exited, closed its stdout, answered
   *     what is not a verdict line, or the attempt was cancelled)
   */
  Evaluation serve(EvalContext ctx) {
    byte[] input = (ctx.caseJson() + "\n").getBytes(StandardCharsets.UTF_8);
    lock.lock();
    try {
      awaiting = true;
      answer = null;
    } finally {
      lock.unlock();
    }
    if (feeding != null && !lastLineWritten()) {
      // It answered the last case without reading all of it; this line would wait behind that one forever.
      return fail(ctx, InfraFailure.Kind.EVALUATOR_CRASHED, "the served command did not read all of the last case's line");
    }
    OutputStream stdin = process.getOutputStream();
    feeding = IO.submit(() -> feed(stdin, input));
    long deadlineNanos = System.nanoTime() + ctx.timeout().toNanos() - TimeUnit.MILLISECONDS.toNanos(ctx.elapsedMillis());
    lock.lock();
    try {
      while (answer == null && outOfStep == null && !stdoutEnded && !ctx.cancelled()) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
          break;
        }
        changed.awaitNanos(left);
      }
      awaiting = false;
      if (answer != null && !ctx.cancelled()) {
        Evaluation answered = answered(ctx);
        if (answered != null) {
          return answered;
        }
        lock.unlock();
        return fail(ctx, InfraFailure.Kind.EVALUATOR_CRASHED, "the served command answered with another case's \"" + ID_FIELD
            + "\" (out of step: two answers to an earlier case?); its process tree was killed");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      awaiting = false;
      close();
      return Evaluation.failed(InfraFailure.Kind.EVALUATOR_CRASHED, "interrupted while waiting for the case", ctx.elapsedMillis());
    } finally {
      if (lock.isHeldByCurrentThread()) {
        lock.unlock();
      }
    }
    if (ctx.cancelled()) {
      return fail(ctx, InfraFailure.Kind.EVALUATOR_CRASHED, "cancelled: " + ctx.cancelReason());
    }
    String garbage;
    boolean ended;
    lock.lock();
    try {
      garbage = outOfStep;
      ended = stdoutEnded;
    } finally {
      lock.unlock();
    }
    if (garbage != null) {
      return fail(ctx, InfraFailure.Kind.EVALUATOR_CRASHED, "the served command " + garbage + "; its process tree was killed");
    }
    if (!ended) {
      return fail(ctx, InfraFailure.Kind.TIMEOUT, "the served command did not answer within the case timeout of "
          + ctx.timeout().toMillis() + " ms; its process tree was killed");
    }
    if (waitQuietly(ExecEvaluator.PUMP_GRACE)) {
      int exit = process.exitValue();
      if (exit == ExecEvaluator.KILLED_BY_SIGKILL) {
        return fail(ctx, InfraFailure.Kind.SIGNALED, "the served command was killed by signal 9, SIGKILL (exit value "
            + exit + "): the out-of-memory killer, or a kill -9 from outside");
      }
      return fail(ctx, InfraFailure.Kind.EVALUATOR_CRASHED, "the served command exited (exit value " + exit
          + ") without answering the case");
    }
    return fail(ctx, InfraFailure.Kind.EVALUATOR_CRASHED, "the served command closed its stdout without answering the case;"
        + " its process tree was killed");
  }

  /**
   * The answer's outcome, or null if it carries another case's id. Called holding the lock; starts the next
   * case's output afresh.
   */
  private Evaluation answered(EvalContext ctx) {
    ExecEvaluator.VerdictLine v = answer;
    String stdout = answeredStdout;
    String stderr = err.tail();
    err = tailOnly();
    answer = null;
    long durationMillis = ctx.elapsedMillis();
    if (v.problem() != null) {
      String message = "malformed verdict line (the served command's answer): " + v.problem() + "; stdout tail:\n";
      String output = message + lastChars(stdout, Math.max(0, ExecEvaluator.OUTPUT_TAIL_LIMIT - message.length()));
      return new Evaluation.Finished(new Outcome(Verdict.ERROR, null, output, durationMillis, null, null, null, stderr));
    }
    String fields = v.fieldsJson();
    if (fields != null) {
      ObjectNode object;
      try {
        object = (ObjectNode) CaseJson.MAPPER.readTree(fields);
      } catch (IOException e) {
        throw new IllegalStateException("the verdict line's own fields did not parse again: " + fields, e);
      }
      JsonNode id = object.remove(ID_FIELD);
      if (id != null && !(id.isTextual() && id.textValue().equals(ctx.caseId()))) {
        return null; // out of step: the caller fails the case
      }
      fields = object.isEmpty() ? null : object.toString();
    }
    // No exit code decides here: a line with only a score or an answer passes, as exec's exit 0 would.
    Verdict verdict = v.verdict() != null ? v.verdict() : Verdict.PASS;
    return new Evaluation.Finished(new Outcome(verdict, v.score(), stdout, durationMillis, v.answer(), fields, null, stderr));
  }

  /** Closes the process, then reports the failure with the case's output so far. */
  private Evaluation fail(EvalContext ctx, InfraFailure.Kind kind, String detail) {
    close();
    String tail;
    lock.lock();
    try {
      tail = OutputCapture.joinTails(out.tail(), err.tail(), ExecEvaluator.OUTPUT_TAIL_LIMIT);
    } finally {
      lock.unlock();
    }
    waitQuietly(ExecEvaluator.KILL_WAIT);
    if (process.isAlive()) {
      process.destroyForcibly();
    }
    return Evaluation.failed(kind, tail.isEmpty() ? detail : detail + "; output tail: " + lastChars(tail, 200), ctx.elapsedMillis());
  }

  private boolean waitQuietly(Duration max) {
    try {
      return process.waitFor(max.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !process.isAlive();
    }
  }

  private void pumpStdout() {
    char[] buf = new char[8192];
    try (Reader reader = new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)) {
      int n;
      while ((n = reader.read(buf)) != -1) {
        lock.lock();
        try {
          for (int i = 0; i < n; i++) {
            take(buf[i]);
          }
        } finally {
          lock.unlock();
        }
      }
    } catch (IOException e) {
      // Closed under us: the process was killed.
    } finally {
      lock.lock();
      try {
        stdoutEnded = true;
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  /** One character of stdout; holds the lock. A line is held back until it is known not to be the answer. */
  private void take(char c) {
    if (c == '\n') {
      endLine();
    } else if (lineOverflow) {
      out.append(new char[] {c}, 0, 1);
    } else if (line.length() < ExecEvaluator.VERDICT_LINE_LIMIT) {
      line.append(c);
    } else {
      // Too long to be a verdict line: it is output, unless it started like one.
      lineOverflow = true;
      overflowStartedWithBrace = line.toString().stripLeading().startsWith("{");
      appendOut(line);
      line.setLength(0);
      out.append(new char[] {c}, 0, 1);
    }
  }

  private void endLine() {
    if (lineOverflow) {
      if (overflowStartedWithBrace) {
        outOfStep("answered a line that starts like a verdict object but is longer than the "
            + ExecEvaluator.VERDICT_LINE_LIMIT / 1024 + " KiB verdict line limit");
      }
      out.append(new char[] {'\n'}, 0, 1);
    } else if (line.toString().stripLeading().startsWith("{")) {
      ExecEvaluator.VerdictLine v = ExecEvaluator.parseVerdictLine(line.toString());
      if (v == null) {
        outOfStep("answered a line that is not a verdict line: " + lastChars(line.toString().strip(), 200));
      } else if (!awaiting || answer != null) {
        outOfStep("answered when no case was waiting for an answer (two answers to one case?): "
            + lastChars(line.toString().strip(), 200));
      } else {
        answer = v;
        answeredStdout = out.tail();
        out = tailOnly();
        changed.signalAll();
      }
    } else {
      line.append('\n');
      appendOut(line);
    }
    line.setLength(0);
    lineOverflow = false;
    overflowStartedWithBrace = false;
  }

  private void outOfStep(String why) {
    if (outOfStep == null) {
      outOfStep = why;
    }
    changed.signalAll();
  }

  private void appendOut(StringBuilder text) {
    char[] chars = new char[text.length()];
    text.getChars(0, text.length(), chars, 0);
    out.append(chars, 0, chars.length);
  }

  private void pumpStderr() {
    char[] buf = new char[8192];
    try (Reader reader = new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8)) {
      int n;
      while ((n = reader.read(buf)) != -1) {
        lock.lock();
        try {
          err.append(buf, 0, n);
        } finally {
          lock.unlock();
        }
      }
    } catch (IOException e) {
      // Closed under us: the process was killed.
    }
  }

  /** Whether the last case's line was all written (see {@link #FEED_GRACE}); waits at most that long. */
  private boolean lastLineWritten() {
    try {
      feeding.get(FEED_GRACE.toNanos(), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (ExecutionException e) {
      return true; // feed() keeps its own I/O errors: the stream's end says what happened
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void feed(OutputStream stdin, byte[] input) {
    try {
      stdin.write(input);
      stdin.flush();
    } catch (IOException e) {
      // The process exited or closed its stdin: its stdout's end (or the timeout) says so to the slot.
    }
  }

  private static OutputCapture tailOnly() {
    return new OutputCapture(ExecEvaluator.OUTPUT_TAIL_LIMIT, 0);
  }

  private static String lastChars(String s, int n) {
    return s.length() <= n ? s : "..." + s.substring(s.length() - n);
  }

  private static java.util.concurrent.ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
