package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.core.CaseRecord;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.store.IdempotencyRules;
import dev.tally.core.store.KeyClaim;
import dev.tally.core.store.KeyCompletion;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Twenty requests with one key, released together, each through its own store instance (its own SQLite
 * connections) on one file, as twenty server threads or two coordinators would race: exactly one claims
 * the key and makes a run; every other finds it in progress or completed.
 */
class IdempotencyRaceTest {
  static final int RACERS = 20;

  @TempDir Path dir;

  @Test
  void twentyClaimsOfOneKeyOnOneFileMakeExactlyOneClaimAndOneRun() throws Exception {
    Path file = dir.resolve("tally.db");
    List<SqliteStore> stores = new ArrayList<>();
    for (int i = 0; i < RACERS; i++) {
      stores.add(SqliteStore.open(file)); // one after another: migrating is not what races here
    }
    String scope = IdempotencyRules.scopeOf(dev.tally.core.security.Secret.of("the-token", "API token"));
    RunSpec spec = new RunSpec("race", new EvaluatorSpec("noop", Map.of(), Duration.ofMinutes(1)), 3);
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(RACERS);
    try {
      List<Future<KeyClaim>> claims = new ArrayList<>();
      for (SqliteStore store : stores) {
        Callable<KeyClaim> racer = () -> {
          go.await();
          long now = System.currentTimeMillis();
          KeyClaim claim = store.claimKey(scope, "submission-1", "fp", now, now + 30_000);
          if (claim instanceof KeyClaim.Claimed c) {
            store.createRun(NewRun.of(spec), CaseSource.of(List.of(new CaseRecord(0, "a", "{\"id\":\"a\"}")), "cases"),
                new KeyCompletion(scope, "submission-1", c.reservationToken(), () -> "fp", Duration.ofHours(24),
                    run -> new StoredResponse(201, "application/json", Map.of(),
                        ("{\"id\":" + run.runId() + "}").getBytes(StandardCharsets.UTF_8))));
          }
          return claim;
        };
        claims.add(pool.submit(racer));
      }
      go.countDown();
      int claimed = 0;
      int inProgressOrDone = 0;
      for (Future<KeyClaim> f : claims) {
        KeyClaim c = f.get(2, TimeUnit.MINUTES);
        if (c instanceof KeyClaim.Claimed) {
          claimed++;
        } else {
          assertThat(c).isInstanceOfAny(KeyClaim.InProgress.class, KeyClaim.Completed.class);
          inProgressOrDone++;
        }
      }
      assertThat(claimed).isEqualTo(1);
      assertThat(inProgressOrDone).isEqualTo(RACERS - 1);
      assertThat(stores.get(0).runs()).hasSize(1);
      long now = System.currentTimeMillis();
      assertThat(stores.get(RACERS - 1).claimKey(scope, "submission-1", "fp", now, now + 30_000))
          .isInstanceOf(KeyClaim.Completed.class);
    } finally {
      pool.shutdownNow();
      stores.forEach(SqliteStore::close);
    }
  }
}
