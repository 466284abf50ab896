package dev.tally.core.store;

import dev.tally.core.score.Judge;
import java.time.Clock;
import java.util.Objects;

/**
 * {@code tally rescore}: an ended run's recorded outcomes judged again with new scorers, page after page
 * ({@link Store#rescore}, one transaction each, by {@link BatchRules#rescore}'s rule), so that a run of
 * any size is never held in memory nor keeps the store's writer for long. No evaluator is called.
 *
 * <p>The pages are separate transactions: while a rescore runs, a reader may see some cases judged by the
 * new scorers and the rest by the old (the run's spec names the new ones from the first page on), and a
 * rescore stopped between pages leaves it so. The same rescore run again finishes it (a page applied twice
 * changes nothing); a rescore begun since supersedes it, and this one stops.
 *
 * <p>Thread-safety: stateless; as safe as the store.
 */
public final class Rescoring {
  private Rescoring() {}

  /**
   * Rescores a run, first page to last.
   *
   * @param clock the time each page's counters are written at
   * @return what was done, summed over the pages, or why nothing (or, if superseded, nothing more) was
   * @throws StoreException if the store fails; the pages committed before stay
   */
  public static RescoreResult rescore(Store store, long runId, Judge judge, Clock clock) {
    Objects.requireNonNull(judge, "judge");
    int after = -1;
    long read = 0;
    long rejudged = 0;
    long changed = 0;
    long verdictsChanged = 0;
    while (true) {
      RescorePage page = store.rescore(runId, judge, after, clock.millis());
      read += page.read();
      rejudged += page.rejudged();
      changed += page.changed();
      verdictsChanged += page.verdictsChanged();
      if (page.status() != RescorePage.Status.RESCORED || !page.more()) {
        return new RescoreResult(page.status(), read, rejudged, changed, verdictsChanged);
      }
      after = page.lastPosition();
    }
  }
}
