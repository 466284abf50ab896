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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A fake OpenAI-compatible Chat Completions endpoint on loopback, for tests: {@code POST
 * /v1/chat/completions} answers the arithmetic question in the last user message ({@code What is 38 + 4?}
 * with {@code 42}; {@code +}, {@code -}, {@code *}, {@code ×}, {@code x}, {@code /}, {@code ÷}) with a
 * deterministic completion and usage (a prompt token per word, one completion token). It checks the bearer
 * key (a wrong one gets OpenAI's 401, which quotes the key it refused, so that tests see it redacted),
 * counts requests and billed ones (a 200 is billed; an injected 429 or 500 is not), keeps the bodies it was
 * sent, and can inject failures ({@link #failNext}), slow answers ({@link #delay}) and a body that is not a
 * completion ({@link #answerWith}).
 *
 * <p>Thread-safe: requests are served on a pool of their own, so slow answers overlap.
 */
public final class FakeChatServer implements AutoCloseable {
  /** The base URL's path; requests go to it plus {@code /chat/completions}. */
  public static final String BASE_PATH = "/v1";

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
  private final AtomicInteger failuresLeft = new AtomicInteger();
  private final List<String> bodies = new CopyOnWriteArrayList<>();
  private volatile int failureStatus;
  private volatile String failureRetryAfter;
  private volatile Duration delay = Duration.ZERO;
  private final AtomicReference<String> fixedBody = new AtomicReference<>();

  private FakeChatServer(String key) throws IOException {
    this.key = key;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(BASE_PATH + "/chat/completions", this::handle);
    server.setExecutor(pool);
    server.start();
  }

  /**
   * Starts a server on an ephemeral loopback port.
   *
   * @param key the API key it accepts as {@code Authorization: Bearer KEY}
   */
  public static FakeChatServer start(String key) throws IOException {
    return new FakeChatServer(key);
  }

  /** The base URL to give the evaluator ({@code --base-url}). */
  public String baseUrl() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + BASE_PATH;
  }

  /** Answers the next {@code count} requests with {@code status} (and {@code Retry-After} if not null), unbilled. */
  public void failNext(int count, int status, String retryAfter) {
    failureStatus = status;
    failureRetryAfter = retryAfter;
    failuresLeft.set(count);
  }

  /** Waits this long before answering each request from now on. */
  public void delay(Duration d) {
    delay = d;
  }

  /** Answers every request from now on with status 200 and this body (billed), or as a model again with null. */
  public void answerWith(String body) {
    fixedBody.set(body);
  }

  /** Requests received, whatever their answer. */
  public int requests() {
    return requests.get();
  }

  /** Requests answered with a completion (status 200): what a real endpoint bills. */
  public int billed() {
    return billed.get();
  }

  /** The most requests that were being answered at once. */
  public int maxInFlight() {
    return maxInFlight.get();
  }

  /** The bodies received, in order of arrival. */
  public List<String> bodies() {
    return List.copyOf(bodies);
  }

  private void handle(HttpExchange exchange) throws IOException {
    int now = inFlight.incrementAndGet();
    maxInFlight.accumulateAndGet(now, Math::max);
    try (exchange) {
      requests.incrementAndGet();
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      bodies.add(body);
      if (!delay.isZero()) {
        try {
          TimeUnit.MILLISECONDS.sleep(delay.toMillis()); // the slow endpoint being simulated, not a wait in a test
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
      if (!exchange.getRequestMethod().equals("POST")) {
        send(exchange, 405, error("use POST", "invalid_request_error"), null);
        return;
      }
      String auth = exchange.getRequestHeaders().getFirst("Authorization");
      if (auth == null || !auth.equals("Bearer " + key)) {
        String given = auth == null ? "" : auth.replaceFirst("^Bearer ", "");
        send(exchange, 401, error("Incorrect API key provided: " + given + ". You can find your API key at"
            + " https://platform.openai.com/account/api-keys.", "invalid_request_error"), null);
        return;
      }
      if (failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        send(exchange, failureStatus, error(failureStatus == 429 ? "Rate limit reached" : "The server had an error",
            failureStatus == 429 ? "rate_limit_exceeded" : "server_error"), failureRetryAfter);
        return;
      }
      String fixed = fixedBody.get();
      if (fixed != null) {
        billed.incrementAndGet();
        send(exchange, 200, fixed, null);
        return;
      }
      JsonNode request;
      try {
        request = JSON.readTree(body);
      } catch (IOException e) {
        send(exchange, 400, error("We could not parse the JSON body of your request.", "invalid_request_error"), null);
        return;
      }
      if (!request.path("model").isTextual() || !request.path("messages").isArray()) {
        send(exchange, 400, error("'model' and 'messages' are required properties", "invalid_request_error"), null);
        return;
      }
      billed.incrementAndGet();
      send(exchange, 200, completion(request), null);
    } finally {
      inFlight.decrementAndGet();
    }
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

  private static void send(HttpExchange exchange, int status, String body, String retryAfter) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    if (retryAfter != null) {
      exchange.getResponseHeaders().set("Retry-After", retryAfter);
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
