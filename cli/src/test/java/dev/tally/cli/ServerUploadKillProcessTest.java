package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally server} killed with {@code kill -9} while a 100,000-case NDJSON upload streams into it: the
 * next server on the store has no run of it, and the client's retry with the same {@code Idempotency-Key}
 * makes exactly one run of every case at once (the dead server's hold on the key is released at start), and
 * a further retry replays it.
 */
class ServerUploadKillProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String API_TOKEN = "upload-api-token-0e77c2";
  private static final int CASES = 100_000;
  /** The key, as a client sends it: an RFC 8941 sf-string, quoted. */
  private static final String KEY = "\"upload-kill-4b1d\"";
  /** Body bytes sent before the kill: some 30,000 of the 100,000 case lines, so the kill lands mid-body. */
  private static final long SENT_BEFORE_KILL = 30L * 28 * 1_000;

  @TempDir Path dir;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

  @Test
  void aServerKilledMidUploadLeavesNoRunAndTheRetryWithTheSameKeyMakesExactlyOne() throws Exception {
    Path db = dir.resolve("upload.db");
    Path body = body(dir.resolve("body.ndjson"));
    Path apiToken = Files.writeString(dir.resolve("api-token"), API_TOKEN + "\n");
    Files.setPosixFilePermissions(apiToken, PosixFilePermissions.fromString("rw-------"));
    int workerPort = Ports.freeFixedLoopbackPort();
    // No workers: the run is only created, never run, so nothing but the upload loads the machine.
    List<String> server = List.of("server", "--db=" + db, "--http=127.0.0.1:0", "--workers=0",
        "--listen=127.0.0.1:" + workerPort, "--api-token-file=" + apiToken);
    Path spools = db.resolveSibling(db.getFileName() + "-uploads");

    try (TallyProcess first = TallyProcess.start(dir, "server-1.log", server)) {
      URI api = URI.create(first.serverUrl());
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress(api.getHost(), api.getPort()), 10_000);
        OutputStream out = socket.getOutputStream();
        out.write(("POST /api/v1/runs HTTP/1.1\r\nHost: " + api.getAuthority() + "\r\nAuthorization: Bearer " + API_TOKEN
            + "\r\nContent-Type: application/x-ndjson\r\nIdempotency-Key: " + KEY + "\r\nContent-Length: " + Files.size(body)
            + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        try (InputStream in = Files.newInputStream(body)) {
          out.write(in.readNBytes((int) SENT_BEFORE_KILL));
        }
        out.flush();
        // The server has the upload in hand (spooling it) and has not answered: kill it there.
        await("the upload spooling").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
            .until(() -> spooled(spools) > 0);
        assertThat(socket.getInputStream().available()).as("no answer before the whole body").isZero();
        Signals.send(first.process.pid(), "KILL");
        first.process.waitFor();
      }
    }

    try (TallyProcess second = TallyProcess.start(dir, "server-2.log", server)) {
      String url = second.serverUrl();
      // It stands by (writes answered 503) until the killed server's leader lease lapses, 3 s by default.
      await("the restarted server leads").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> second.output().contains("leading the store under epoch"));
      assertThat(get(url + "/api/v1/runs").get("runs")).as("no run of the interrupted upload").isEmpty();
      assertThat(spooled(spools)).as("the killed upload's spool is deleted at the next start").isZero();

      HttpResponse<String> retried = post(url, body);
      assertThat(retried.statusCode()).as(retried.body()).isEqualTo(201);
      assertThat(retried.headers().firstValue("Idempotent-Replayed")).isEmpty();
      JsonNode run = JSON.readTree(retried.body());
      assertThat(run.get("total").asLong()).isEqualTo(CASES);
      assertThat(retried.headers().firstValue("Location")).hasValueSatisfying(
          location -> assertThat(location).endsWith("/api/v1/runs/" + run.get("id").asLong()));

      HttpResponse<String> again = post(url, body);
      assertThat(again.statusCode()).isEqualTo(201);
      assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
      assertThat(again.body()).isEqualTo(retried.body());

      JsonNode runs = get(url + "/api/v1/runs").get("runs");
      assertThat(runs).hasSize(1);
      assertThat(runs.get(0).get("total").asLong()).isEqualTo(CASES);
      Signals.send(second.process.pid(), "TERM");
      assertThat(second.waitFor(60)).as(second.output()).isZero();
    }
    try (SqliteStore store = SqliteStore.openExisting(db)) {
      List<RunView> runs = store.runs();
      assertThat(runs).hasSize(1);
      assertThat(store.jobs(runs.get(0).runId())).hasSize(CASES);
    }
    for (String log : List.of("server-1.log", "server-2.log")) {
      assertThat(Files.readString(dir.resolve(log))).as(log).doesNotContain(API_TOKEN);
    }
  }

  /** The NDJSON body: the run's fields, then 100,000 noop cases of 28 bytes a line or so. */
  private static Path body(Path file) throws IOException {
    try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write("{\"name\":\"upload-kill\",\"evaluator\":{\"kind\":\"noop\"}}\n");
      for (int i = 0; i < CASES; i++) {
        w.write("{\"id\":\"case-" + i + "\",\"n\":" + i + "}\n");
      }
    }
    return file;
  }

  /** Bytes in the server's upload spools now. */
  private static long spooled(Path spools) throws IOException {
    if (!Files.isDirectory(spools)) {
      return 0;
    }
    try (Stream<Path> files = Files.list(spools)) {
      return files.mapToLong(f -> f.toFile().length()).sum();
    }
  }

  private HttpResponse<String> post(String url, Path body) throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/runs")).header("Authorization", "Bearer " + API_TOKEN)
        .header("Content-Type", "application/x-ndjson").header("Idempotency-Key", KEY).timeout(Duration.ofSeconds(120))
        .POST(HttpRequest.BodyPublishers.ofFile(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode get(String url) throws IOException, InterruptedException {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + API_TOKEN)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return JSON.readTree(r.body());
  }
}
