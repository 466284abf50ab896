package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.coordinator.Coordinator;
import dev.tally.http.ApiServer;
import dev.tally.http.TallyServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally submit} as a real process, killed with {@code kill -9} after its request reached the server
 * and the server made the run, but before the answer came back (a proxy holds it): run again with the same
 * arguments, it finds the pending key in its state file and gets the same run back. One run, the same id.
 */
class SubmitProcessTest {
  private static final String TOKEN = "submit-process-token-91c2";

  @TempDir Path dir;

  @Test
  void aSubmitKilledAfterItsRequestIsFinishedByTheSameCommandWithTheSameRun() throws Exception {
    Path tokenFile = Files.writeString(dir.resolve("api-token"), TOKEN + "\n");
    Path stateDir = dir.resolve("state");
    StringBuilder lines = new StringBuilder();
    for (int i = 0; i < 200; i++) {
      lines.append("{\"id\":\"case-").append(i).append("\"}\n");
    }
    Path cases = Files.writeString(dir.resolve("cases.jsonl"), lines);
    ApiServer.Settings api = ApiServer.Settings.builder().bind("127.0.0.1", 0).token(dev.tally.core.security.Secret.of(TOKEN, "API token")).spoolDirectory(dir.resolve("uploads")).build();
    try (TallyServer server = TallyServer.start(Coordinator.builder().storeFile(dir.resolve("tally.db")), api);
        ResponseProxy proxy = new ResponseProxy(server.api().port(), ResponseProxy.Fault.HOLD, 1)) {
      List<String> args = List.of("submit", cases.toString(), "--server", "http://127.0.0.1:" + proxy.port(), "--token-file",
          tokenFile.toString(), "--state-dir", stateDir.toString(), "--evaluator", "noop");
      try (TallyProcess first = TallyProcess.start(dir, "submit-1.log", args)) {
        await("the server answered the first request (the proxy holds the answer)").atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(50)).until(() -> {
              if (!first.process.isAlive()) {
                throw new AssertionError("tally submit exited early:\n" + first.output());
              }
              return proxy.answersLost() == 1;
            });
        assertThat(stateFiles(stateDir)).as("the key is on disk before the first request").hasSize(1);
        Signals.send(first.process.pid(), "KILL");
        first.process.waitFor();
      }
      assertThat(server.coordinator().store().runs()).hasSize(1);
      long runId = server.coordinator().store().runs().get(0).runId();
      assertThat(stateFiles(stateDir)).as("killed before the answer: the key stays").hasSize(1);

      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int exit = Main.commandLine().setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
          .execute(args.toArray(String[]::new));
      assertThat(exit).as(err.toString()).isZero();
      assertThat(err.toString()).contains("finishing the submission of " + cases);
      assertThat(out.toString().strip()).startsWith(runId + " ");
      assertThat(server.coordinator().store().runs()).hasSize(1);
      List<String> keys = proxy.idempotencyKeys();
      assertThat(keys).hasSize(2);
      assertThat(keys.get(1)).isEqualTo(keys.get(0));
      assertThat(stateFiles(stateDir)).as("confirmed: the key is forgotten").isEmpty();
      assertThat(Files.readString(dir.resolve("submit-1.log"))).doesNotContain(TOKEN);
    }
  }

  private static List<Path> stateFiles(Path stateDir) throws Exception {
    if (!Files.isDirectory(stateDir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(stateDir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".json")).toList();
    }
  }
}
