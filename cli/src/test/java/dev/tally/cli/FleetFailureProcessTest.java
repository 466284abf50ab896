package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunView;
import dev.tally.store.SqliteStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Workers that are alive but bad, cases that kill their workers, and workers too busy to think, with
 * real processes. A case finds the worker JVM running it as its grandparent (case shell, then the
 * worker's supervisor shell, then the JVM), whose command line names the worker ({@code --name=local-N}).
 */
class FleetFailureProcessTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Shell that sets $jvm to the pid of the worker JVM running this case. */
  private static final String FIND_WORKER = "jvm=$(ps -o ppid= -p $PPID | tr -d ' ')\n";

  @TempDir Path dir;

  private Path dataset(int n, String extraCase) throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      lines.add("{\"id\":\"c" + i + "\"}");
    }
    if (extraCase != null) {
      lines.add(n / 2, extraCase);
    }
    Path file = dir.resolve("cases.jsonl");
    Files.write(file, lines);
    return file;
  }

  private Path script(String name, String body) throws Exception {
    Path file = dir.resolve(name);
    Files.writeString(file, "#!/bin/sh\n" + body);
    return file;
  }

  private List<String> run(Path dataset, String... extra) {
    List<String> args = new ArrayList<>(List.of("run", dataset.toString(), "--db=" + dir.resolve("t.db"),
        "--out=" + dir.resolve("results.jsonl"), "--summary=" + dir.resolve("summary.json"), "--no-progress"));
    args.addAll(List.of(extra));
    return args;
  }

  @Test
  void aWorkerThatFailsEveryCaseWhileHeartbeatingIsEjectedAndTheRunPasses() throws Exception {
    Path broken = script("gray.sh", FIND_WORKER
        + "if tr '\\0' '\\n' < /proc/$jvm/cmdline | grep -qx -- '--name=local-4'; then kill -9 $$; fi\n"
        + "echo ok\n");
    Path cases = dataset(400, null);
    try (TallyProcess tally = TallyProcess.start(dir, "tally.log",
        run(cases, "--workers=4", "--slots=2", "--evaluator=exec", "--cmd=sh " + broken + " {id}"))) {
      assertThat(tally.waitFor(180)).as("output:%n%s", tally.output()).isZero();
      assertThat(tally.output()).contains("outlier detection: worker").contains("ejected");
    }
    JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
    assertThat(summary.get("passed").asLong()).as("at least 99%% of 400 pass").isGreaterThanOrEqualTo(396);
    try (SqliteStore store = SqliteStore.open(dir.resolve("t.db"))) {
      RunView run = store.runs().get(0);
      List<AttemptView> attempts = store.attempts(run.runId());
      assertThat(attempts).filteredOn(a -> a.worker().equals("local-4") && a.ending().equals("recorded")).isEmpty();
      assertThat(attempts.stream().filter(a -> a.worker().equals("local-4")).count())
          .as("the broken worker was ejected after a few failures, not fed the run").isLessThan(40);
    }
    java.io.StringWriter status = new java.io.StringWriter();
    picocli.CommandLine cl = Main.commandLine();
    cl.setOut(new java.io.PrintWriter(status, true));
    assertThat(cl.execute("status", "--db=" + dir.resolve("t.db"))).isZero();
    assertThat(status.toString().lines().filter(l -> l.startsWith("local-4")))
        .as("status shows the ejection and its reason:%n%s", status).singleElement().asString().contains("ejected").contains("consecutive infrastructure failures");
  }

  @Test
  void aCaseThatKillsEveryWorkerRunningItEndsFailedAsPoisonWhileTheOthersPass() throws Exception {
    Path killer = script("case.sh", FIND_WORKER
        + "if [ \"$1\" = poison ]; then kill -9 $jvm; sleep 5; fi\n"
        + "echo ok\n");
    Path cases = dataset(100, "{\"id\":\"poison\"}");
    try (TallyProcess tally = TallyProcess.start(dir, "tally.log",
        run(cases, "--workers=3", "--slots=1", "--evaluator=exec", "--cmd=sh " + killer + " {id}"))) {
      assertThat(tally.waitFor(180)).as("output:%n%s", tally.output()).isEqualTo(Main.EXIT_FAILED);
    }
    try (SqliteStore store = SqliteStore.open(dir.resolve("t.db"))) {
      RunView run = store.runs().get(0);
      assertThat(run.counters().passed()).isEqualTo(100);
      assertThat(run.counters().jobsFailed()).isEqualTo(1);
      JobView poison = store.jobs(run.runId()).stream().filter(j -> j.caseId().equals("poison")).findFirst().orElseThrow();
      assertThat(poison.state()).isEqualTo(JobState.FAILED);
      assertThat(poison.failureReason()).startsWith("poison: 3 attempts in a row");
    }
    JsonNode poisonLine = null;
    for (String line : Files.readAllLines(dir.resolve("results.jsonl"))) {
      JsonNode row = JSON.readTree(line);
      if (row.get("id").asText().equals("poison")) {
        poisonLine = row;
      }
    }
    assertThat(poisonLine).isNotNull();
    assertThat(poisonLine.get("verdict").asText()).isEqualTo("error");
    assertThat(poisonLine.get("history")).hasSize(3);
  }

  @Test
  void aWorkerWhoseEverySlotRunsACpuBoundCaseForTwiceTheWindowIsNotReaped() throws Exception {
    Path busy = script("busy.sh", "exec python3 -c 'import time\nt = time.time()\nwhile time.time() - t < 4.5: pass'\n");
    Path cases = dataset(4, null);
    try (TallyProcess tally = TallyProcess.start(dir, "tally.log",
        run(cases, "--workers=2", "--slots=2", "--evaluator=exec", "--cmd=sh " + busy,
            "--heartbeat-interval=200ms", "--detection-window=2s"))) {
      assertThat(tally.waitFor(120)).as("output:%n%s", tally.output()).isZero();
    }
    JsonNode summary = JSON.readTree(dir.resolve("summary.json").toFile());
    assertThat(summary.get("passed").asLong()).isEqualTo(4);
    assertThat(summary.get("redeliveries").asLong()).as("no worker was reaped").isZero();
  }
}
