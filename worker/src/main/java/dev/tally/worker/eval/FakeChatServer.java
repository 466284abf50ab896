package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A fake OpenAI-compatible Chat Completions endpoint, for the tests of the model evaluator and for {@code
 * tally bench --evaluator model}; not an endpoint to serve anyone. It listens on the loopback address only
 * ({@link InetAddress#getLoopbackAddress()}, an ephemeral port), so nothing off the machine can reach it.
 *
 * <p>{@code POST /v1/chat/completions} answers the arithmetic question in the last user message ({@code What
 * is 38 + 4?} with {@code 42}; {@code +}, {@code -}, {@code *}, {@code ×}, {@code x}, {@code /}, {@code ÷})
 * with a deterministic completion and usage (a prompt token per word, one completion token). A grading
 * prompt (a model-graded scorer's: {@code [Task]}, {@code [Answer to grade]}) it grades as a careful grader
 * would: {@code GRADE: C} when the answer's last number is the task's result, else {@code GRADE: I}. With a key it
 * checks the bearer key (a wrong one gets OpenAI's 401, which quotes the key it refused, so that tests see it
 * redacted); without one it takes any request. It can inject failures ({@link #failNext}: 429 with {@code
 * Retry-After}, 500s), slow answers (a fixed latency, {@link #delay}), answers held back until a test lets
 * them go ({@link #hold}, {@link #release}) and a body that is not a completion ({@link #answerWith}).
 *
 * <p>It counts what a real endpoint's bill and load would show: requests received, requests <b>billed</b> (a
 * 2xx answer the server has finished sending; an injected 429 or 500 is not billed), requests <b>in
 * flight</b> (arrived, not yet answered) and the most in flight at once. A request is counted billed only
 * after it has left in flight, so at any instant {@code billed() <= requests answered} and a client that dies
 * can have caused at most {@code inFlight()} more bills than it saw answered. The counters are also served as
 * JSON at {@code GET /fake/counters} ({@link #COUNTERS_PATH}) for a process that did not start the server
 * (the benchmark's coordinator), and {@code POST /fake/counters} starts a new peak ({@link #resetPeak}).
 *
 * <p>Thread-safe: requests are served on a pool of their own, so slow answers overlap; the counters are
 * atomics and the settings volatile, so a test may change them while requests are served.
 */
public final class FakeChatServer implements AutoCloseable {
  /** The base URL's path; requests go to it plus {@code /chat/completions}. */
  public static final String BASE_PATH = "/v1";

  /** Where the counters are served ({@code GET}) and the peak reset ({@code POST}). */
  public static final String COUNTERS_PATH = "/fake/counters";

  /**
   * Connections the listening socket queues before accepting: the JDK's default (50) is below the 256
   * connections a benchmark's workers open at once, and a refused SYN costs the client a second's retry.
   */
  static final int ACCEPT_BACKLOG = 1024;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern QUESTION = Pattern.compile("(-?\\d+(?:\\.\\d+)?)\\s*([-+*×x/÷])\\s*(-?\\d+(?:\\.\\d+)?)");

  private final HttpServer server;
  private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "fake-chat-server");
    t.setDaemon(true);
    return t;
  });
  private final String key;
  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicInteger billed = new AtomicInteger();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger maxInFlight = new AtomicInteger();
  /** Requests whose handler has not yet finished counting them; guarded by itself, notified at zero. */
  private final int[] unsettled = new int[1];
  private final AtomicInteger failuresLeft = new AtomicInteger();
  private final List<String> bodies = new CopyOnWriteArrayList<>();
  private volatile int failureStatus;
  private volatile String failureRetryAfter;
  private volatile Duration delay = Duration.ZERO;
  /** While held, the latch answers wait on; null when answers flow. */
  private volatile CountDownLatch held;
  private final AtomicReference<String> fixedBody = new AtomicReference<>();

  private FakeChatServer(String key) throws IOException {
    this.key = key;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), ACCEPT_BACKLOG);
    server.createContext(BASE_PATH + "/chat/completions", this::handle);
    server.createContext(COUNTERS_PATH, this::counters);
    server.setExecutor(pool);
    server.start();
  }

  /**
   * Starts a server on an ephemeral loopback port.
   *
   * @param key the API key it accepts as {@code Authorization: Bearer KEY}, or null to accept any request
   *     with or without one
   * @throws IOException if the port cannot be bound
   */
  public static FakeChatServer start(String key) throws IOException {
    return new FakeChatServer(key);
  }

  /** The base URL to give the evaluator ({@code --base-url}): {@code http://127.0.0.1:PORT/v1} (or {@code [::1]}). */
  public String baseUrl() {
    InetAddress address = server.getAddress().getAddress();
    String host = address instanceof java.net.Inet6Address ? "[" + address.getHostAddress() + "]" : address.getHostAddress();
    return "http://" + host + ":" + server.getAddress().getPort() + BASE_PATH;
  }

  /** Answers the next {@code count} requests with {@code status} (and {@code Retry-After} if not null), unbilled. */
  public void failNext(int count, int status, String retryAfter) {
    failureStatus = status;
    failureRetryAfter = retryAfter;
    failuresLeft.set(count);
  }

  /** Waits this long before answering each request from now on: the endpoint's latency, zero for none. */
  public void delay(Duration d) {
    delay = d;
  }

  /**
   * Holds back every answer from now on, those of requests already waiting out their latency included, until
   * {@link #release}: the requests stay in flight, so a test can kill a process at a moment when exactly the
   * requests in flight are those not yet answered. Calling it while held does nothing.
   */
  public synchronized void hold() {
    if (held == null) {
      held = new CountDownLatch(1);
    }
  }

  /** Lets the held answers go, and answers flow again. Calling it while not held does nothing. */
  public synchronized void release() {
    if (held != null) {
      held.countDown();
      held = null;
    }
  }

  /** Answers every request from now on with status 200 and this body (billed), or as a model again with null. */
  public void answerWith(String body) {
    fixedBody.set(body);
  }

  /** Requests received, whatever their answer. */
  public int requests() {
    return requests.get();
  }

  /** Requests whose 2xx answer the server has finished sending: what a real endpoint bills. */
  public int billed() {
    return billed.get();
  }

  /**
   * {@link #billed()} once every request that has arrived is counted: a client reads its answer before the
   * server's handler has counted it, so a test that asserts a bill right after an answer asks this.
   *
   * @param timeout how long to wait for the handlers still counting
   * @return the requests billed
   * @throws IllegalStateException if a handler is still counting after {@code timeout} (a held answer)
   * @throws InterruptedException if interrupted while waiting
   */
  public int billedOnceSettled(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (unsettled) {
      while (unsettled[0] > 0) {
        long leftMillis = (deadline - System.nanoTime()) / 1_000_000;
        if (leftMillis <= 0) {
          throw new IllegalStateException(unsettled[0] + " requests still being answered after " + timeout);
        }
        unsettled.wait(leftMillis);
      }
    }
    return billed.get();
  }

  /** Requests arrived and not yet answered, now. */
  public int inFlight() {
    return inFlight.get();
  }

  /** The most requests in flight at once since the server started or {@link #resetPeak}. */
  public int maxInFlight() {
    return maxInFlight.get();
  }

  /** Starts a new peak: {@link #maxInFlight} becomes the requests in flight now. */
  public void resetPeak() {
    maxInFlight.set(inFlight.get());
  }

  /** The bodies received, in order of arrival. */
  public List<String> bodies() {
    return List.copyOf(bodies);
  }

  /**
   * The counters as {@link #COUNTERS_PATH} serves them: {@code {"requests", "billed", "inFlight",
   * "maxInFlight"}}, each a count.
   */
  public String countersJson() {
    ObjectNode c = JSON.createObjectNode();
    c.put("requests", requests.get());
    c.put("billed", billed.get());
    c.put("inFlight", inFlight.get());
    c.put("maxInFlight", maxInFlight.get());
    return c.toString();
  }

  private void counters(HttpExchange exchange) throws IOException {
    try (exchange) {
      exchange.getRequestBody().readAllBytes();
      switch (exchange.getRequestMethod()) {
        case "GET" -> send(exchange, 200, countersJson(), null);
        case "POST" -> {
          resetPeak();
          send(exchange, 200, countersJson(), null);
        }
        default -> send(exchange, 405, error("use GET or POST", "invalid_request_error"), null);
      }
    }
  }

  private void handle(HttpExchange exchange) throws IOException {
    synchronized (unsettled) {
      unsettled[0]++;
    }
    try {
      handleCounted(exchange);
    } finally {
      synchronized (unsettled) {
        if (--unsettled[0] == 0) {
          unsettled.notifyAll();
        }
      }
    }
  }

  private void handleCounted(HttpExchange exchange) throws IOException {
    int now = inFlight.incrementAndGet();
    maxInFlight.accumulateAndGet(now, Math::max);
    boolean answered = false;
    try (exchange) {
      requests.incrementAndGet();
      int status = answer(exchange);
      answered = true;
      // Out of flight first, then billed: a reader never sees a bill the in-flight count does not cover.
      inFlight.decrementAndGet();
      if (status / 100 == 2) {
        billed.incrementAndGet();
      }
    } finally {
      if (!answered) {
        inFlight.decrementAndGet();
      }
    }
  }

  /** Reads the request, waits the latency and sends the answer; returns its status. */
  private int answer(HttpExchange exchange) throws IOException {
    String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    bodies.add(body);
    if (!delay.isZero()) {
      try {
        TimeUnit.NANOSECONDS.sleep(delay.toNanos()); // the slow endpoint being simulated, not a wait in a test
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted: the server is closing", e);
      }
    }
    CountDownLatch gate = held;
    if (gate != null) {
      try {
        gate.await(); // held by the test until it releases; close() interrupts
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted: the server is closing", e);
      }
    }
    if (!exchange.getRequestMethod().equals("POST")) {
      return send(exchange, 405, error("use POST", "invalid_request_error"), null);
    }
    String auth = exchange.getRequestHeaders().getFirst("Authorization");
    if (key != null && (auth == null || !auth.equals("Bearer " + key))) {
      String given = auth == null ? "" : auth.replaceFirst("^Bearer ", "");
      return send(exchange, 401, error("Incorrect API key provided: " + given + ". You can find your API key at"
          + " https://platform.openai.com/account/api-keys.", "invalid_request_error"), null);
    }
    if (failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
      int status = failureStatus;
      return send(exchange, status, error(status == 429 ? "Rate limit reached" : "The server had an error",
          status == 429 ? "rate_limit_exceeded" : "server_error"), failureRetryAfter);
    }
    String fixed = fixedBody.get();
    if (fixed != null) {
      return send(exchange, 200, fixed, null);
    }
    JsonNode request;
    try {
      request = JSON.readTree(body);
    } catch (IOException e) {
      return send(exchange, 400, error("We could not parse the JSON body of your request.", "invalid_request_error"), null);
    }
    if (!request.path("model").isTextual() || !request.path("messages").isArray()) {
      return send(exchange, 400, error("'model' and 'messages' are required properties", "invalid_request_error"), null);
    }
    return send(exchange, 200, completion(request), null);
  }

  private static String completion(JsonNode request) {
    String question = "";
    int words = 0;
    for (JsonNode m : request.path("messages")) {
      String content = m.path("content").asText("");
      words += content.isBlank() ? 0 : content.strip().split("\\s+").length;
      if (m.path("role").asText().equals("user")) {
        question = content;
      }
    }
    ObjectNode r = JSON.createObjectNode();
    r.put("id", "chatcmpl-fake");
    r.put("object", "chat.completion");
    r.put("created", 0);
    r.put("model", request.path("model").asText() + "-fake");
    ObjectNode choice = r.putArray("choices").addObject();
    choice.put("index", 0);
    ObjectNode message = choice.putObject("message");
    message.put("role", "assistant");
    message.put("content", answer(question));
    choice.put("finish_reason", "stop");
    ObjectNode usage = r.putObject("usage");
    usage.put("prompt_tokens", words);
    usage.put("completion_tokens", 1);
    usage.put("total_tokens", words + 1);
    return r.toString();
  }

  /** The arithmetic question's result, exact (a division that does not come out whole to 6 places), or "I don't know". */
  static String answer(String question) {
    int graded = question.indexOf("[Answer to grade]");
    if (question.startsWith("You are grading") && graded > 0) {
      String right = answer(question.substring(0, graded));
      String given = question.substring(graded + "[Answer to grade]".length());
      int rubric = given.indexOf("[Rubric]");
      given = (rubric < 0 ? given : given.substring(0, rubric)).strip();
      Matcher number = Pattern.compile("-?\\d+(\\.\\d+)?").matcher(given);
      String last = null;
      while (number.find()) {
        last = number.group();
      }
      boolean known = !right.equals("undefined") && !right.startsWith("I don");
      boolean correct = known && last != null && new BigDecimal(last).compareTo(new BigDecimal(right)) == 0;
      return "The task's result is " + right + "; the answer says " + given + ".\nGRADE: " + (correct ? "C" : "I");
    }
    Matcher m = QUESTION.matcher(question);
    if (!m.find()) {
      return "I don't know.";
    }
    BigDecimal a = new BigDecimal(m.group(1));
    BigDecimal b = new BigDecimal(m.group(3));
    BigDecimal result = switch (m.group(2)) {
      case "+" -> a.add(b);
      case "-" -> a.subtract(b);
      case "*", "×", "x" -> a.multiply(b);
      default -> b.signum() == 0 ? null : a.divide(b, 6, RoundingMode.HALF_EVEN);
    };
    return result == null ? "undefined" : result.stripTrailingZeros().toPlainString();
  }

  private static String error(String message, String type) {
    ObjectNode r = JSON.createObjectNode();
    ObjectNode e = r.putObject("error");
    e.put("message", message);
    e.put("type", type);
    return r.toString();
  }

  /** Sends the whole answer (headers and body, the body's stream closed); returns {@code status}. */
  private static int send(HttpExchange exchange, int status, String body, String retryAfter) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    if (retryAfter != null) {
      exchange.getResponseHeaders().set("Retry-After", retryAfter);
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
    return status;
  }

  /** Stops listening and ends the requests being answered (their clients see the connection close). */
  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
