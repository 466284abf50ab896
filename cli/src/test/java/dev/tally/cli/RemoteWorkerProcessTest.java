package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A coordinator on --listen with local worker processes, joined by a worker started on its own. */
class RemoteWorkerProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void aWorkerStartedElsewhereJoinsTheRunAndMixesWithLocalWorkers() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    Path dataset = dir.resolve("cases.jsonl");
    List<String> lines = new ArrayList<>();
    // 800 cases of 30 ms keep a lone local worker busy for about 12 s: time enough for the remote one,
    // backing off while nobody listens, to come in and take some.
    for (int i = 0; i < 800; i++) {
      lines.add("{\"id\":\"s" + i + "\",\"millis\":30}");
    }
    Files.write(dataset, lines);

    // The remote worker starts first: it must keep retrying until the coordinator listens.
    try (TallyProcess remote = TallyProcess.start(dir, "remote.log", List.of("worker", "--coordinator=127.0.0.1:" + port, "--slots=2", "--name=remote-1"));
        TallyProcess run = TallyProcess.start(dir, "run.log", List.of(
            "run", dataset.toString(), "--listen=127.0.0.1:" + port, "--workers=1", "--slots=2", "--evaluator=sleep",
            "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"))) {
      assertThat(run.waitFor(120)).as("run output:%n%s", run.output()).isZero();
      Set<String> workers = new HashSet<>();
      List<String> results = Files.readAllLines(dir.resolve("results.jsonl"));
      assertThat(results).hasSize(800);
      for (String line : results) {
        workers.add(JSON.readTree(line).get("worker").asText());
      }
      assertThat(workers).as("both the local and the remote worker ran cases").containsExactlyInAnyOrder("local-1", "remote-1");
      assertThat(remote.process.isAlive()).as("a remote worker outlives the run and waits for the next coordinator").isTrue();
      assertThat(remote.output()).as("a worker says when it has joined")
          .contains("tally worker: joined the coordinator at 127.0.0.1:" + port + " as remote-1, 2 slots");

      // The next coordinator on that address gets it: the worker says so, at WARN, as it said it lost the first.
      Path next = Files.write(dir.resolve("next.jsonl"), List.of("{\"id\":\"n1\"}", "{\"id\":\"n2\"}"));
      try (TallyProcess again = TallyProcess.start(dir, "again.log", List.of(
          "run", next.toString(), "--listen=127.0.0.1:" + port, "--workers=0", "--evaluator=noop",
          "--out=" + dir.resolve("next-results.jsonl"), "--summary=" + dir.resolve("next-summary.json"), "--no-progress"))) {
        assertThat(again.waitFor(120)).as("second run's output:%n%s", again.output()).isZero();
      }
      assertThat(remote.output()).contains("WARN").contains("lost the coordinator at 127.0.0.1:" + port)
          .contains("reconnected to the coordinator at 127.0.0.1:" + port);
      assertThat(remote.output().split("tally worker: joined", -1)).as("joining is said once, rejoining is a WARN").hasSize(2);
    }
  }
}
