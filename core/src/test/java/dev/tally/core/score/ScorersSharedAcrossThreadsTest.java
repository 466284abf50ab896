package dev.tally.core.score;

import static dev.tally.core.score.ScorerTesting.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A worker's slots share one list of scorers: each must judge the same under concurrent calls. */
class ScorersSharedAcrossThreadsTest {

  @Test
  void everyBuiltInJudgesTheSameFromManyThreadsAtOnce() throws Exception {
    List<Scorer> scorers = Scorers.parse(List.of(
        "exact:ignore-case", "includes", "regex:pattern=(\\d+)$", "numeric:rel=0.1", "choice",
        "json:schema-field=shape,name=shape"));
    int threads = 4;
    int rounds = 300;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int seed = t;
        futures.add(pool.submit(() -> {
          int checked = 0;
          for (int i = 0; i < rounds; i++) {
            int n = seed * rounds + i;
            boolean right = n % 2 == 0;
            JsonNode c = json("{\"id\":\"c" + n + "\",\"target\":\"" + n + "\",\"choices\":[\"x\",\"" + n + "\"],"
                + "\"shape\":{\"type\":\"integer\",\"minimum\":" + n + "}}");
            String answer = right ? String.valueOf(n) : String.valueOf(n * 2 + 1000);
            for (Scorer s : scorers) {
              ScoreResult r = s.score(c, answer);
              boolean expected = switch (s.name()) {
                case "includes" -> answer.contains(String.valueOf(n));
                case "regex", "shape" -> true; // a trailing number, and an integer of at least n, either way
                default -> right; // exact, numeric (off by far more than 10%) and choice (no such choice)
              };
              assertThat(r.passed()).as(s.name() + " on case " + n + " answer " + answer).isEqualTo(expected);
              checked++;
            }
          }
          return checked;
        }));
      }
      int total = 0;
      for (Future<Integer> f : futures) {
        total += f.get(2, TimeUnit.MINUTES);
      }
      assertThat(total).isEqualTo(threads * rounds * scorers.size());
    } finally {
      pool.shutdownNow();
    }
  }
}
