package dev.tally.simulation;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.EvaluatorSpec;
import dev.tally.core.Outcome;
import dev.tally.core.Verdict;
import dev.tally.core.store.AttemptTiming;
import dev.tally.core.store.AttemptView;
import dev.tally.core.store.memory.InMemoryStore;
import dev.tally.core.store.JobState;
import dev.tally.core.store.JobView;
import dev.tally.core.store.RunCounters;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The store checks of the one invariant checker, on stores that break them on purpose: each check can
 * fail, and a sound run passes them all. (Whole histories, and planted bugs, are {@link SimulationTest}'s.)
 */
class CheckerTest {
  private static final RunSpec SPEC = new RunSpec("/d.jsonl", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 5);
  private static final Outcome PASS = new Outcome(Verdict.PASS, null, "", 1);

  /** A store that shows one crafted run, its jobs and attempts. */
  private static final class Crafted extends ForwardingStore {
    private final RunView run;
    private final List<JobView> jobs;
    private final List<AttemptView> attempts;

    Crafted(RunCounters counters, List<JobView> jobs, List<AttemptView> attempts) {
      super(InMemoryStore.create(Clock.systemUTC()));
      this.run = new RunView(1, "", SPEC, dev.tally.core.store.RunState.FINISHED, 0, 10_000, counters);
      this.jobs = jobs;
      this.attempts = attempts;
    }

    @Override
    public Optional<RunView> run(long runId) {
      return runId == 1 ? Optional.of(run) : Optional.empty();
    }

    @Override
    public List<JobView> jobs(long runId) {
      return jobs;
    }

    @Override
    public List<AttemptView> attempts(long runId) {
      return attempts;
    }
  }

  private static JobView done(long id, String caseId, long token) {
    return new JobView(id, 1, (int) id - 1, caseId, JobState.DONE, token, (int) token, "w1", PASS, null);
  }

  private static AttemptView attempt(long job, long token, long start, long end, String ending) {
    return new AttemptView(job, token, "w1", start, end, ending, "", AttemptTiming.elapsed(end - start));
  }

  @Test
  void aSoundRunWithARedeliveryPassesEveryCheck() {
    Crafted store = new Crafted(RunCounters.builder(2).passed(2).redeliveries(1).build(),
        List.of(done(1, "a", 1), done(2, "b", 2)),
        List.of(attempt(1, 1, 0, 100, "recorded"), attempt(2, 1, 0, 50, "worker_lost"), attempt(2, 2, 60, 200, "recorded")));
    assertThat(Checker.checkRun(store, 1, List.of("a", "b")).violations()).isEmpty();
  }

  @Test
  void aLeaseThatNeverEndedAMissedRedeliveryAndALeaseIssuedTooEarlyAreCaught() {
    Crafted store = new Crafted(RunCounters.builder(1).passed(1).build(),
        List.of(done(1, "a", 3)),
        // token 2 never ended; token 3 was issued before token 1 ended; one requeue not counted
        List.of(attempt(1, 1, 0, 100, "worker_lost"), attempt(1, 3, 50, 200, "recorded")));
    assertThat(Checker.checkRun(store, 1, List.of("a")).violations())
        .anyMatch(v -> v.startsWith("I1: ") && v.contains("leases 1..3 were issued but the ended attempts have tokens [1, 3]"))
        .anyMatch(v -> v.startsWith("I3: ") && v.contains("lease 3 was issued at 50, before lease 1 ended at 100"))
        .anyMatch(v -> v.startsWith("I2: ") && v.contains("redeliveries 0 but 1 ended attempts put their job back in the queue"));
  }

  @Test
  void anOutcomeFromAStaleTokenAndALeaseAfterTheRecordAreCaught() {
    Crafted store = new Crafted(RunCounters.builder(1).passed(1).redeliveries(1).build(),
        List.of(done(1, "a", 1)),
        List.of(attempt(1, 1, 0, 100, "recorded"), attempt(1, 2, 150, 300, "worker_lost")));
    assertThat(Checker.checkRun(store, 1, List.of("a")).violations())
        .anyMatch(v -> v.startsWith("I3: ") && v.contains("recorded under token 1 although token 2 had been issued"))
        .anyMatch(v -> v.startsWith("I3: ") && v.contains("attempt 2 (worker_lost) started at 150, after the outcome was recorded at 100"));
  }

  @Test
  void countersThatDisagreeWithTheJobsAreCaught() {
    Crafted store = new Crafted(RunCounters.builder(2).passed(2).duplicatesSuppressed(1).build(),
        List.of(done(1, "a", 1), new JobView(2, 1, 1, "b", JobState.FAILED, 1, 1, null, null, "out of attempts")),
        List.of(attempt(1, 1, 0, 100, "recorded"), attempt(2, 1, 0, 100, "worker_lost")));
    assertThat(Checker.checkRun(store, 1, List.of("a", "b")).violations())
        .anyMatch(v -> v.startsWith("I2: ") && v.contains("counters say 2 recorded (2 pass, 0 fail, 0 error) but 1 jobs are done"))
        .anyMatch(v -> v.startsWith("I2: ") && v.contains("counters say 0 jobs failed but 1 jobs are failed"));
  }

  /** Two coordinators on one store: c1 leads under epoch 1 and writes; c2 takes epoch 2 after the lease lapses. */
  private static List<EpochLedger.Entry> takeover(boolean plantUnfencedView) {
    long[] now = {0};
    InMemoryStore durable = InMemoryStore.create(Clock.systemUTC());
    EpochLedger ledger = new EpochLedger(() -> now[0]);
    dev.tally.core.store.Store own1 = durable.reopen();
    dev.tally.core.store.Store c1 = ledger.recording(plantUnfencedView ? new UnfencedStore(own1) : own1, "c1");
    dev.tally.core.store.Store c2 = ledger.recording(durable.reopen(), "c2");
    dev.tally.core.lead.LeaderRow first = new dev.tally.core.lead.LeaderRow(1, "c1", null, 1_000);
    assertThat(c1.swapLeader(dev.tally.core.lead.LeaderRow.NONE, first)).isTrue();
    c1.writeAs(1);
    c2.writeAs(dev.tally.core.store.Store.NOT_LEADING);
    now[0] = 10;
    c1.saveWorkerStatuses(List.of(status("w1")));
    now[0] = 5_000;
    assertThat(c2.swapLeader(first, new dev.tally.core.lead.LeaderRow(2, "c2", null, 8_000))).isTrue();
    c2.writeAs(2);
    now[0] = 5_100;
    try {
      c1.saveWorkerStatuses(List.of(status("w2"))); // the thawed leader
    } catch (dev.tally.core.store.StaleEpochException refused) {
      // what a fenced store does
    }
    c2.saveWorkerStatuses(List.of(status("w3")));
    return ledger.entries();
  }

  private static dev.tally.core.store.WorkerStatus status(String id) {
    return new dev.tally.core.store.WorkerStatus(id, id, "", true, 0, null, 0, 0, 0, null, 0.0, 1);
  }

  @Test
  void aThawedLeaderRefusedByTheStoreKeepsTheLeaderRule() {
    List<EpochLedger.Entry> entries = takeover(false);
    assertThat(entries).extracting(EpochLedger.Entry::kind).containsExactly(EpochLedger.Kind.LEAD, EpochLedger.Kind.WRITE,
        EpochLedger.Kind.LEAD, EpochLedger.Kind.REFUSED, EpochLedger.Kind.WRITE);
    assertThat(Checker.checkEpochs(entries)).isEmpty();
  }

  @Test
  void aWriteUnderAStaleEpochIsCaught() {
    assertThat(Checker.checkEpochs(takeover(true))).containsExactly(
        "EPOCH: coordinator c1 committed a write (saveWorkerStatuses) under epoch 1 at 5100 ms, after epoch 2 took the"
            + " lead at 5000 ms");
  }

  @Test
  void anEpochThatGoesBackAndAStandbysWriteAreCaught() {
    List<EpochLedger.Entry> entries = List.of(
        new EpochLedger.Entry(0, EpochLedger.Kind.LEAD, 2, "c1", "h1"),
        new EpochLedger.Entry(5, EpochLedger.Kind.LEAD, 1, "c2", "h2"),
        new EpochLedger.Entry(6, EpochLedger.Kind.WRITE, dev.tally.core.store.Store.NOT_LEADING, "c3", "apply"));
    assertThat(Checker.checkEpochs(entries))
        .anyMatch(v -> v.startsWith("EPOCH: ") && v.contains("took epoch 1 at 5 ms, after epoch 2 had led"))
        .anyMatch(v -> v.startsWith("EPOCH: ") && v.contains("c3 committed a write (apply) at 6 ms under no epoch (a standby)"));
  }
}
