package dev.tally.coordinator;

import dev.tally.core.CaseRecord;
import dev.tally.core.RedeliveryPolicy;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.store.KeyReservationLostException;
import dev.tally.core.store.NewRun;
import dev.tally.core.store.RunPage;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.core.store.Store;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * How a coordinator picks up work in its store after an earlier coordinator died mid-run (even with
 * {@code kill -9}): which run a submission resumes instead of starting over, and when the earlier
 * coordinator's leases are released at once instead of being left to expire.
 *
 * <p><b>The same run.</b> A submission resumes an unfinished run with an equal {@link RunSpec} (dataset
 * path, evaluator and its options, case timeout, attempt limit, and the digest of the cases' content) whose
 * jobs are the submitted cases, same ids in the same order. Then no case already recorded runs again. A
 * dataset edited since (same path, evaluator and attempt limit, other content) is a new run; the old one
 * is reported so that it can be finished by id.
 *
 * <p><b>Leases of the dead.</b> The earlier coordinator's leases are held by its workers. If none of
 * them can reach this coordinator, they are released at once (each ended as an attempt lost to the
 * restart); otherwise they are left for reconnecting workers to reclaim, or to expire. No worker of the
 * earlier coordinator can find one listening on a port picked at random: its local workers died with it,
 * and no remote worker knew that port.
 *
 * <p>Thread-safety: safe from any thread as far as the store is; the store serializes its writes.
 */
public final class RunResumption {
  private final Store store;
  private final Clock clock;
  private final boolean earlierWorkersCanReturn;

  /**
   * @param store the coordinator's store
   * @param clock wall time for the attempts that releasing leases ends
   * @param earlierWorkersCanReturn whether a worker of an earlier coordinator on this store can connect
   *     to this one (it listens on a fixed port); if not, {@link #takeOver} releases their leases
   * @param redelivery judges whether each released job goes back to the queue or ends
   */
  private final RedeliveryPolicy redelivery;

  public RunResumption(Store store, Clock clock, boolean earlierWorkersCanReturn, RedeliveryPolicy redelivery) {
    this.redelivery = Objects.requireNonNull(redelivery, "redelivery");
    this.store = Objects.requireNonNull(store, "store");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.earlierWorkersCanReturn = earlierWorkersCanReturn;
  }

  /**
   * What {@link #runFor} chose.
   *
   * @param runId the run to submit
   * @param resumed how the unfinished run was taken over, or empty if the run is new
   * @param changedSince unfinished runs of the same dataset path, evaluator and attempt limit whose cases
   *     differ from these (the file was edited since): not resumed, finishable by id
   * @param finishedBefore for a new run, the latest run of the same spec that finished (every case ended),
   *     if any: a coordinator killed after its run's end and before it wrote the results leaves one, whose
   *     results {@code tally resume} writes without running a case; the same command runs the whole dataset
   *     again, which a user paying per eval would rather know at once
   */
  public record Choice(long runId, Optional<TakeOver> resumed, List<RunView> changedSince, Optional<RunView> finishedBefore) {
    public Choice {
      Objects.requireNonNull(resumed, "resumed");
      changedSince = List.copyOf(changedSince);
      Objects.requireNonNull(finishedBefore, "finishedBefore");
    }
  }

  /**
   * A run taken over from an earlier coordinator.
   *
   * @param run the run as it was found (its counters say how many cases had already ended)
   * @param leasesReleased how many of its leases were released at once (0 when their workers may return)
   */
  public record TakeOver(RunView run, int leasesReleased) {}

  /**
   * Cases that can be read more than once, each time from the first: a dataset file. {@link #runFor} reads
   * them to compare an unfinished run's ids with them, then again to create a new run.
   */
  @FunctionalInterface
  public interface Cases {
    /**
     * A fresh read of the cases, in dataset order; {@link #runFor} closes it if it is {@link AutoCloseable}.
     *
     * @throws CaseSourceException if the cases cannot be read
     */
    CaseSource open() throws CaseSourceException;
  }

  /**
   * The run for a submission of {@code cases}: the unfinished run of the same spec and cases, taken over
   * ({@link #takeOver}), or else a new run created in the store.
   *
   * @param spec what the cases are submitted with
   * @param cases the cases, in dataset order
   * @return the choice
   * @throws IllegalArgumentException if two cases share an id or a position; nothing is written
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public Choice runFor(RunSpec spec, List<CaseRecord> cases) {
    try {
      return runFor(spec, () -> CaseSource.of(cases, "the cases"));
    } catch (CaseSourceException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }

  /**
   * The run for a submission of {@code cases}, which are read as they are needed and never held: the
   * unfinished run of the same spec whose cases have the same ids in the same order (compared a page at a
   * time against a fresh read), taken over ({@link #takeOver}); or else a new run created in the store
   * from another fresh read ({@link Store#createRun(NewRun, CaseSource, dev.tally.core.store.KeyCompletion)}).
   *
   * @param spec what the cases are submitted with
   * @param cases the cases, read afresh each time they are needed
   * @return the choice
   * @throws CaseSourceException if a read of the cases fails or refuses a case, or two cases share an id or a
   *     position; nothing is written
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public Choice runFor(RunSpec spec, Cases cases) throws CaseSourceException {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(cases, "cases");
    List<RunView> runs = store.runs();
    for (RunView r : runs) {
      if (!r.ended() && r.spec().equals(spec) && sameIds(r, cases)) {
        return new Choice(r.runId(), Optional.of(takeOver(r)), List.of(), Optional.empty());
      }
    }
    List<RunView> changed = new ArrayList<>();
    Optional<RunView> finished = Optional.empty();
    for (RunView r : runs) {
      if (r.state() == dev.tally.core.store.RunState.FINISHED && r.spec().equals(spec)
          && (finished.isEmpty() || finished.get().runId() < r.runId())) {
        finished = Optional.of(r);
      }
      RunSpec old = r.spec();
      if (!r.ended() && old.dataset().equals(spec.dataset()) && old.evaluator().equals(spec.evaluator())
          && old.limits().equals(spec.limits())) {
        changed.add(r);
      }
    }
    long runId;
    CaseSource source = cases.open();
    try {
      runId = store.createRun(NewRun.of(spec), source, null).run().runId();
    } catch (KeyReservationLostException e) {
      throw new IllegalStateException("a run made without a key cannot lose one", e);
    } finally {
      close(source);
    }
    return new Choice(runId, Optional.empty(), changed, finished);
  }

  /** Whether run {@code r}'s cases have the ids of {@code cases}, in the same order (both streamed). */
  private boolean sameIds(RunView r, Cases cases) throws CaseSourceException {
    CaseSource source = cases.open();
    try {
      CaseSourceException[] failed = new CaseSourceException[1];
      boolean[] same = {true};
      long[] compared = {0};
      store.forEachCase(r.runId(), (id, json) -> {
        try {
          CaseRecord c = source.next();
          same[0] = c != null && c.caseId().equals(id);
        } catch (CaseSourceException e) {
          failed[0] = e;
          same[0] = false;
        }
        compared[0]++;
        return same[0];
      });
      if (failed[0] != null) {
        throw failed[0];
      }
      return same[0] && compared[0] == r.counters().total() && source.next() == null;
    } finally {
      close(source);
    }
  }

  private static void close(CaseSource source) throws CaseSourceException {
    if (source instanceof AutoCloseable closeable) {
      try {
        closeable.close();
      } catch (Exception e) {
        throw new CaseSourceException(source.name(), 0, "cannot close: " + e.getMessage());
      }
    }
  }

  /**
   * Takes over every run of the store that has not ended (running: not finished, not cancelled), oldest
   * first, as {@link #takeOver} does one: for a server, which serves every run of its store. Reads the runs
   * a page at a time.
   *
   * @return what was done for each, oldest run first
   * @throws dev.tally.core.store.StoreException if the store fails
   */
  public List<TakeOver> takeOverUnfinished() {
    List<RunView> running = new ArrayList<>();
    long before = Long.MAX_VALUE;
    while (true) {
      List<RunView> page = store.runs(new RunPage(before, RunPage.MAX_LIMIT));
      for (RunView r : page) {
        if (!r.ended()) {
          running.add(r);
        }
      }
      if (page.size() < RunPage.MAX_LIMIT) {
        break;
      }
      before = page.get(page.size() - 1).runId();
    }
    java.util.Collections.reverse(running);
    List<TakeOver> out = new ArrayList<>(running.size());
    for (RunView r : running) {
      out.add(takeOver(r));
    }
    return out;
  }

  /**
   * Takes over an unfinished run whose coordinator died: releases its leases at once if no worker of an
   * earlier coordinator can reach this one (see the class doc), so its jobs run again without waiting for
   * the leases to expire. A finished run is left as it is.
   *
   * @param run the run, as read from the store
   * @return what was done
   * @throws dev.tally.core.store.StoreException if the store fails; nothing is changed
   */
  public TakeOver takeOver(RunView run) {
    if (run.ended() || earlierWorkersCanReturn) {
      return new TakeOver(run, 0);
    }
    return new TakeOver(run, store.releaseLeases(run.runId(), clock.millis(), redelivery));
  }
}
