package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.coordinator.Coordinator;
import dev.tally.core.CaseRecord;
import dev.tally.core.EffectKey;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.Store;
import dev.tally.core.store.memory.InMemoryStore;
import dev.tally.worker.LocalWorker;
import dev.tally.worker.WorkerSession;
import dev.tally.worker.WorkerSettings;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code TALLY_*} variables an exec case gets, end to end through a coordinator: what they say, and
 * that the idempotency key is the same for every attempt of a case (on any worker, in-process or remote)
 * and different for every other case and run.
 */
class CaseEnvironmentTest {
  private static final Duration PATIENCE = Duration.ofSeconds(60);

  @TempDir Path dir;

  /** Each case appends one line to {@code log}: its variables, space-separated. */
  private static String loggingCommand(Path log) {
    return "sh -c 'echo \"$TALLY_RUN_ID $TALLY_CASE_ID $TALLY_JOB_ID $TALLY_ATTEMPT $TALLY_FENCING_TOKEN"
        + " $TALLY_IDEMPOTENCY_KEY\" >> " + log + "; sleep \"$0\"' {pause}";
  }

  private static long run(Store store, String command, List<String> caseIds, double pauseSeconds) {
    List<CaseRecord> cases = new ArrayList<>();
    for (int i = 0; i < caseIds.size(); i++) {
      cases.add(new CaseRecord(i, caseIds.get(i), "{\"id\":\"" + caseIds.get(i) + "\",\"pause\":\"" + pauseSeconds + "\"}"));
    }
    return store.createRun(new RunSpec("cases.jsonl", new EvaluatorSpec("exec", Map.of("cmd", command),
        Duration.ofMinutes(1)), 5), cases);
  }

  private static List<String[]> lines(Path log) throws Exception {
    return Files.readAllLines(log).stream().map(l -> l.split(" ")).toList();
  }

  @Test
  void theVariablesDescribeTheAttemptAndTheKeyDiffersForEveryCaseAndRun() throws Exception {
    Path log = dir.resolve("env.log");
    Store store = InMemoryStore.create(Clock.systemUTC());
    try (Coordinator c = Coordinator.builder().store(store).start()) {
      LocalWorker local = LocalWorker.start("in-process", 2, 2, c.scheduler(), store.storeId());
      long first = run(store, loggingCommand(log), List.of("a", "b", "c"), 0);
      c.submit(first).get(60, TimeUnit.SECONDS);
      long second = run(store, loggingCommand(log), List.of("a", "b", "c"), 0);
      c.submit(second).get(60, TimeUnit.SECONDS);
      local.close("test over");

      // A remote worker computes the key from the store id its Welcome carries: the same as in-process.
      long third = run(store, loggingCommand(log), List.of("a"), 0);
      WorkerSession remote = new WorkerSession(WorkerSettings.builder("127.0.0.1", c.port()).slots(1).build());
      try {
        remote.start();
        c.submit(third).get(60, TimeUnit.SECONDS);
      } finally {
        remote.close();
      }

      List<String[]> lines = lines(log);
      assertThat(lines).hasSize(7);
      Set<String> keys = new HashSet<>();
      for (String[] l : lines) {
        long runId = Long.parseLong(l[0]);
        String caseId = l[1];
        JobView job = store.jobs(runId).stream().filter(j -> j.caseId().equals(caseId)).findFirst().orElseThrow();
        assertThat(Long.parseLong(l[2])).as("job id").isEqualTo(job.jobId());
        assertThat(l[3]).as("attempt").isEqualTo("1");
        assertThat(Long.parseLong(l[4])).as("fencing token").isEqualTo(job.token());
        assertThat(l[5]).as("key").isEqualTo(EffectKey.of(store.storeId(), runId, caseId));
        keys.add(l[5]);
      }
      assertThat(keys).as("one key per case per run").hasSize(7);
    }
  }

  @Test
  void theKeyIsTheSameForEveryAttemptOfACaseWhenItsWorkerIsLostMidCase() throws Exception {
    Path log = dir.resolve("env.log");
    Store store = InMemoryStore.create(Clock.systemUTC());
    try (Coordinator c = Coordinator.builder().store(store).start()) {
      long runId = run(store, loggingCommand(log), List.of("only"), 2);
      LocalWorker doomed = LocalWorker.start("doomed", 1, 0, c.scheduler(), store.storeId());
      var done = c.submit(runId);
      await().atMost(PATIENCE).until(() -> Files.exists(log) && lines(log).size() == 1);
      doomed.close("killed mid-case"); // the scheduler sees it lost, and the case goes to the next worker
      LocalWorker survivor = LocalWorker.start("survivor", 1, 0, c.scheduler(), store.storeId());
      done.get(60, TimeUnit.SECONDS);
      survivor.close("test over");

      List<String[]> lines = lines(log);
      assertThat(lines).hasSize(2);
      assertThat(lines.get(0)[3]).isEqualTo("1");
      assertThat(lines.get(1)[3]).as("a redelivery").isEqualTo("2");
      assertThat(Long.parseLong(lines.get(1)[4])).as("a later lease, a greater token").isGreaterThan(Long.parseLong(lines.get(0)[4]));
      assertThat(lines.get(1)[5]).as("the same key").isEqualTo(lines.get(0)[5]);
    }
  }
}
