package dev.tally.store;

import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunSpec;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A child process for {@link StreamingCreateMemoryTest}: creates one run of N generated cases in a SQLite
 * store, either pulled one at a time through a {@link CaseSource} ({@code stream}) or held in a list first
 * ({@code list}), and prints the time it took, the jobs stored and the heap's peak use.
 *
 * <p>Usage: {@code CreateManyCases STORE-FILE N stream|list}
 */
public final class CreateManyCases {
  /** Bytes of padding per case: a case is a prompt or a test of a few hundred bytes, not an id alone. */
  static final int PAD_CHARS = 200;

  private CreateManyCases() {}

  public static void main(String[] args) throws Exception {
    Path file = Path.of(args[0]);
    int n = Integer.parseInt(args[1]);
    boolean stream = args[2].equals("stream");
    String pad = "x".repeat(PAD_CHARS);
    RunSpec spec = new RunSpec("generated", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 3);
    try (SqliteStore store = SqliteStore.open(file)) {
      long started = System.nanoTime();
      long runId;
      if (stream) {
        CaseSource source = new CaseSource() {
          int next;

          @Override
          public CaseRecord next() {
            if (next == n) {
              return null;
            }
            int i = next++;
            return new CaseRecord(i, "case-" + i, "{\"id\":\"case-" + i + "\",\"prompt\":\"" + pad + i + "\"}");
          }

          @Override
          public String name() {
            return "generated";
          }

          @Override
          public int lineOf(int position) {
            return position + 1;
          }
        };
        runId = store.createRun(NewRun.of(spec), source, null).run().runId();
      } else {
        List<CaseRecord> all = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          all.add(new CaseRecord(i, "case-" + i, "{\"id\":\"case-" + i + "\",\"prompt\":\"" + pad + i + "\"}"));
        }
        runId = store.createRun(spec, all);
      }
      long millis = (System.nanoTime() - started) / 1_000_000;
      long peak = 0;
      for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
        if (pool.getType() == MemoryType.HEAP) {
          peak += pool.getPeakUsage().getUsed();
        }
      }
      System.out.println("jobs=" + store.run(runId).orElseThrow().counters().total() + " millis=" + millis
          + " heapPeakBytes=" + peak + " heapMaxBytes=" + Runtime.getRuntime().maxMemory());
    }
  }
}
