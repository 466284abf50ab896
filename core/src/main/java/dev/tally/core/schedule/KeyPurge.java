package dev.tally.core.schedule;

import dev.tally.core.store.Store;
import dev.tally.core.store.StoreBatchResult;
import dev.tally.core.store.StoreException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The duty that purges idempotency keys that are over ({@code IdempotencyRules.purge}: completed keys past
 * their time to live, holds long past their end), every {@link #INTERVAL}, on the scheduler's thread (the
 * store's one writer). The keys are only an index of past submissions: a failed purge is logged and tried
 * again at the next interval, never allowed to stop the runs.
 */
final class KeyPurge implements Duty {
  private static final Logger log = LoggerFactory.getLogger(KeyPurge.class);

  /**
   * Ten minutes: keys live 24 hours by default, so an expired key lingers at most a small fraction of that,
   * and the purge (one indexed delete) costs the writer nothing worth counting.
   */
  static final Duration INTERVAL = Duration.ofMinutes(10);

  private final Store store;
  private long lastPurgeMillis = Long.MIN_VALUE;

  KeyPurge(Store store) {
    this.store = store;
  }

  @Override
  public void plan(Step step) {
    if (lastPurgeMillis != Long.MIN_VALUE && step.nowMillis - lastPurgeMillis < INTERVAL.toMillis()) {
      return;
    }
    lastPurgeMillis = step.nowMillis;
    try {
      int purged = store.purgeKeys(step.nowMillis);
      if (purged > 0) {
        log.info("purged {} idempotency keys past their time to live", purged);
      }
    } catch (dev.tally.core.store.StaleEpochException e) {
      // Another coordinator leads the store: the leadership step-down says so; the keys are its to purge.
      log.info("expired idempotency keys not purged: {}", e.getMessage());
    } catch (StoreException e) {
      log.warn("could not purge expired idempotency keys (tried again in {} min)", INTERVAL.toMinutes(), e);
    }
  }

  @Override
  public void settle(Step step, StoreBatchResult result) {}
}
