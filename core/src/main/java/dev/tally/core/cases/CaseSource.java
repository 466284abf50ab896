package dev.tally.core.cases;

import dev.tally.core.CaseRecord;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * Cases pulled one at a time, in dataset order, for a store to insert as they come ({@link
 * dev.tally.core.store.Store#createRun}): a run of a million cases never needs them all in memory. A source
 * that finds a bad case throws {@link CaseSourceException} naming its place, and the store then writes
 * nothing of the run.
 *
 * <p>Thread-safety: a source is pulled by one thread.
 */
public interface CaseSource {

  /**
   * The next case, or null when there are no more.
   *
   * @throws CaseSourceException if the next case is bad or the source cannot be read; the caller stops
   */
  CaseRecord next() throws CaseSourceException;

  /** What the cases come from, in words for messages ({@code cases.jsonl}, {@code request body}). */
  String name();

  /**
   * The 1-based line the case at {@code position} came from, for messages; 0 when the source has no lines
   * or does not know. A source answers at least for every position it has returned.
   */
  int lineOf(int position);

  /** The refusal of the case at {@code position} (one this source returned) because {@code detail}. */
  default CaseSourceException refuse(int position, String detail) {
    int line = lineOf(position);
    return new CaseSourceException(name(), line, line > 0 ? detail : "case " + (position + 1) + ": " + detail);
  }

  /**
   * The cases of a list, in list order (their positions are their own); no lines. The list must not change
   * while the source is pulled.
   *
   * @param name what the cases are, for messages
   */
  static CaseSource of(List<CaseRecord> cases, String name) {
    Objects.requireNonNull(name, "name");
    Iterator<CaseRecord> it = cases.iterator();
    return new CaseSource() {
      @Override
      public CaseRecord next() {
        return it.hasNext() ? it.next() : null;
      }

      @Override
      public String name() {
        return name;
      }

      @Override
      public int lineOf(int position) {
        return 0;
      }
    };
  }
}
