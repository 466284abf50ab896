package dev.tally.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.worker.eval.FakeChatServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@link FakeChatServer} in a process of its own, for {@code tally bench --evaluator model}: the benchmark
 * measures its coordinator's CPU by its process's CPU time, which must not include the endpoint's.
 *
 * <p>The child ({@link #main}, argument: the latency in milliseconds) starts the server on loopback without a
 * key, prints its base URL as its first line on stdout, and serves until its stdin ends (the benchmark closes
 * it, or dies). The parent reads the counters over HTTP ({@link FakeChatServer#COUNTERS_PATH}).
 *
 * <p>Thread-safety: an instance is used by the benchmark's one thread; its HTTP client is thread-safe.
 */
final class FakeEndpoint implements AutoCloseable {
  /** What the child prints before its base URL, so the parent knows the line for its own. */
  static final String READY = "fake endpoint: ";

  /**
   * How long the child may take to start and to stop: a JVM starting on a loaded 2-core machine takes
   * seconds; a minute means something is wrong.
   */
  static final Duration START_STOP_TIMEOUT = Duration.ofMinutes(1);

  /** The endpoint is a small JVM: its work is sleeping requests and writing short answers. */
  private static final List<String> JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC");

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Process process;
  private final String baseUrl;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  /** The endpoint's counters: each a count of requests ({@link FakeChatServer}'s meanings). */
  record Counters(long requests, long billed, long inFlight, long maxInFlight) {}

  private FakeEndpoint(Process process, String baseUrl) {
    this.process = process;
    this.baseUrl = baseUrl;
  }

  /**
   * Starts the endpoint's process from this process's classpath.
   *
   * @param latency how long it waits before each answer, at least 0
   * @param log where the child's stderr goes
   * @throws IOException if it cannot be started, or exits or says nothing within {@link #START_STOP_TIMEOUT}
   *     (it is stopped)
   */
  static FakeEndpoint start(Duration latency, Path log) throws IOException {
    List<String> command = dev.tally.cli.LocalWorkerProcesses.javaCommand(JVM_OPTIONS, FakeEndpoint.class.getName());
    command.add(Long.toString(latency.toMillis()));
    Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    try {
      // readLine blocks; the child prints at once or exits (end of stream), and a hung one is ended by the timer.
      ProcessHandle handle = p.toHandle();
      var timer = CompletableFuture.delayedExecutor(START_STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      var guard = CompletableFuture.runAsync(handle::destroyForcibly, timer);
      BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String line = out.readLine();
      guard.cancel(false);
      if (line == null || !line.startsWith(READY)) {
        throw new IOException("the fake endpoint did not start (see " + log + "); it said: " + line);
      }
      return new FakeEndpoint(p, line.substring(READY.length()).strip());
    } catch (IOException | RuntimeException e) {
      p.destroyForcibly();
      throw e;
    }
  }

  /** The base URL for {@code --base-url}. */
  String baseUrl() {
    return baseUrl;
  }

  /** The counters now. */
  Counters counters() throws IOException, InterruptedException {
    return counters(HttpRequest.newBuilder(countersUri()).GET().build());
  }

  /** Starts a new peak of requests in flight, and returns the counters. */
  Counters resetPeak() throws IOException, InterruptedException {
    return counters(HttpRequest.newBuilder(countersUri()).POST(HttpRequest.BodyPublishers.noBody()).build());
  }

  private URI countersUri() {
    return URI.create(baseUrl.substring(0, baseUrl.length() - FakeChatServer.BASE_PATH.length()) + FakeChatServer.COUNTERS_PATH);
  }

  private Counters counters(HttpRequest request) throws IOException, InterruptedException {
    HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException("the fake endpoint's counters: HTTP " + r.statusCode() + ": " + r.body());
    }
    JsonNode c = JSON.readTree(r.body());
    return new Counters(c.get("requests").asLong(), c.get("billed").asLong(), c.get("inFlight").asLong(), c.get("maxInFlight").asLong());
  }

  /** Ends the child: its stdin closed, then killed if it has not exited within {@link #START_STOP_TIMEOUT}. */
  @Override
  public void close() {
    try {
      process.getOutputStream().close();
      if (!process.waitFor(START_STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
      }
    } catch (IOException e) {
      process.destroyForcibly();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The child: serves {@link FakeChatServer} with the latency {@code args[0]} (milliseconds) until stdin ends.
   *
   * @param args one argument, the latency in whole milliseconds, at least 0
   */
  public static void main(String[] args) throws IOException {
    long millis;
    try {
      millis = Long.parseLong(args.length == 1 ? args[0] : "");
    } catch (NumberFormatException e) {
      millis = -1;
    }
    if (millis < 0) {
      System.err.println("usage: FakeEndpoint LATENCY_MILLIS (a whole number >= 0), got " + List.of(args));
      System.exit(2);
    }
    try (FakeChatServer server = FakeChatServer.start(null)) {
      server.delay(Duration.ofMillis(millis));
      PrintStream out = System.out;
      out.println(READY + server.baseUrl());
      out.flush();
      while (System.in.read() >= 0) {
        // serving until the parent closes stdin or dies
      }
    }
  }
}
