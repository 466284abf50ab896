package dev.tally.cli.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback HTTP server that answers from a script, one answer per request in order (the last one
 * repeated), and keeps what each request was: for the client's tests, where the real API cannot be made to
 * fail on cue.
 */
final class ScriptedServer implements AutoCloseable {
  /** An answer: status, headers, body. */
  record Answer(int status, Map<String, String> headers, String body) {
    static Answer problem(int status, String type, String detail, Map<String, String> headers) {
      return new Answer(status, headers, "{\"type\":\"" + type + "\",\"title\":\"t\",\"status\":" + status + ",\"detail\":\"" + detail + "\"}");
    }
  }

  /** A request as received: when (nanos), method, path, headers, body. */
  record Received(long atNanos, String method, String path, Map<String, List<String>> headers, byte[] body) {
    String header(String name) {
      return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name)).map(e -> e.getValue().get(0))
          .findFirst().orElse(null);
    }
  }

  private final HttpServer server;
  private final ConcurrentLinkedQueue<Answer> script;
  private volatile Answer last;
  final List<Received> received = new CopyOnWriteArrayList<>();

  ScriptedServer(List<Answer> answers) throws IOException {
    this.script = new ConcurrentLinkedQueue<>(answers);
    this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", this::answer);
    server.start();
  }

  URI url() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  private void answer(HttpExchange exchange) throws IOException {
    byte[] body;
    try (InputStream in = exchange.getRequestBody()) {
      body = in.readAllBytes();
    }
    received.add(new Received(System.nanoTime(), exchange.getRequestMethod(), exchange.getRequestURI().toString(),
        Map.copyOf(exchange.getRequestHeaders()), body));
    Answer a = script.poll();
    if (a == null) {
      a = last;
    } else {
      last = a;
    }
    byte[] out = a.body().getBytes(StandardCharsets.UTF_8);
    a.headers().forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
    if (a.status() >= 400) {
      exchange.getResponseHeaders().add("Content-Type", "application/problem+json");
    }
    exchange.sendResponseHeaders(a.status(), out.length == 0 ? -1 : out.length);
    if (out.length > 0) {
      exchange.getResponseBody().write(out);
    }
    exchange.close();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
