package dev.tally.cli;

import static org.awaitility.Awaitility.await;

import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunView;
import dev.tally.core.store.StoreException;
import dev.tally.store.SqliteStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real {@code tally} process started from the test classpath, for tests that kill and freeze processes.
 * Output goes to a file, so a test can show it when it fails. Public for the process tests of other
 * packages ({@code dev.tally.cli.dashboard}).
 */
public final class TallyProcess implements AutoCloseable {
  public final Process process;
  public final Path log;

  private TallyProcess(Process process, Path log) {
    this.process = process;
    this.log = log;
  }

  public static TallyProcess start(Path dir, String logName, List<String> args) throws IOException {
    return start(dir, logName, args, java.util.Map.of());
  }

  /**
   * Starts {@code tally ARGS} in {@code dir} with {@code environment} added to (or, for a null value,
   * removed from) this process's environment.
   */
  static TallyProcess start(Path dir, String logName, List<String> args, java.util.Map<String, String> environment)
      throws IOException {
    return startMain(Main.class, dir, logName, args, environment);
  }

  /**
   * Starts {@code mainClass ARGS} from the test classpath in {@code dir}: a test's own process (a worker
   * with a test evaluator, say) beside real {@code tally} ones.
   */
  static TallyProcess startMain(Class<?> mainClass, Path dir, String logName, List<String> args,
      java.util.Map<String, String> environment) throws IOException {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-Xmx512m", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), mainClass.getName()));
    command.addAll(args);
    Path log = dir.resolve(logName);
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
    environment.forEach((name, value) -> {
      if (value == null) {
        builder.environment().remove(name);
      } else {
        builder.environment().put(name, value);
      }
    });
    return new TallyProcess(builder.start(), log);
  }

  /** The worker processes this run started, found by their {@code --name=} argument. */
  public Optional<ProcessHandle> worker(String name) {
    return process.descendants().filter(h -> commandLine(h.pid()).contains("--name=" + name)).findFirst();
  }

  /** A process's arguments from /proc (ProcessHandle.Info leaves them out for long command lines). */
  static List<String> commandLine(long pid) {
    try {
      return List.of(Files.readString(Path.of("/proc", Long.toString(pid), "cmdline")).split("\0"));
    } catch (IOException e) {
      return List.of();
    }
  }

  /** What {@code tally server} prints at start: its API's base URL. */
  private static final Pattern SERVER_API =
      Pattern.compile("tally server: API (https?://127\\.0\\.0\\.1:\\d+)/api/v1 ");

  /**
   * The URL ({@code http://127.0.0.1:PORT}) of a {@code tally server} on loopback, once it has printed its
   * start line.
   *
   * @throws AssertionError if the server exits first, or says nothing within a minute
   */
  public String serverUrl() {
    String[] url = new String[1];
    await("the server's start line").atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(100)).until(() -> {
          Matcher m = SERVER_API.matcher(output());
          if (m.find()) {
            url[0] = m.group(1);
            return true;
          }
          if (!process.isAlive()) {
            throw new AssertionError("tally server exited early:\n" + output());
          }
          return false;
        });
    return url[0];
  }

  public int waitFor(long seconds) throws InterruptedException {
    if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
      throw new AssertionError("tally did not finish in " + seconds + " s; output:\n" + output());
    }
    return process.exitValue();
  }

  /**
   * Waits as {@code wait} says until {@code condition} holds; when it times out, the failure carries this
   * process's output, which is what explains it.
   */
  public void awaiting(org.awaitility.core.ConditionFactory wait, java.util.concurrent.Callable<Boolean> condition) {
    try {
      wait.until(condition);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError(e.getMessage() + "; tally output:\n" + output(), e);
    }
  }

  public String output() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no output: " + e.getMessage() + ")";
    }
  }

  /**
   * Writes {@code total} sleep cases, ids {@code prefix + i}, each sleeping 20–80 ms (uniform, from
   * {@code seed}): the process tests' usual dataset.
   */
  public static Path sleepDataset(Path file, int total, String prefix, long seed) throws IOException {
    java.util.Random random = new java.util.Random(seed);
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      lines.add("{\"id\":\"" + prefix + i + "\",\"millis\":" + (20 + random.nextInt(61)) + "}");
    }
    return Files.write(file, lines);
  }

  /**
   * The first run's counters in a store a live coordinator may still be creating: read without migrating
   * ({@link SqliteStore#openExisting}), and empty until the file and its schema are there.
   */
  static Optional<RunCounters> counters(Path db) {
    if (!Files.exists(db)) {
      return Optional.empty();
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      return store.runs().stream().findFirst().map(RunView::counters);
    } catch (StoreException notReadyYet) {
      return Optional.empty();
    }
  }

  @Override
  public void close() {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
  }
}
