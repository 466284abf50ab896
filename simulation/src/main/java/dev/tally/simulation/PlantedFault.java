package dev.tally.simulation;

import dev.tally.coordinator.net.PlantedConnectionFault;
import dev.tally.core.store.memory.InMemoryStore;
import java.util.Locale;

/**
 * A known bug planted on purpose, to prove that the {@link Checker} catches real bugs: with one planted, a
 * run of the CI seed budget must report at least one violation.
 */
public enum PlantedFault {
  /** The store answers a resent result with RECORDED again and advances the run's counters (breaks I2). */
  COUNT_DUPLICATES("count-duplicates"),
  /**
   * The store accepts a result whatever its token while the job is leased or pending: the fencing check is
   * gone (breaks I3).
   */
  SKIP_FENCING("skip-fencing"),
  /**
   * The jobs of a lost worker are never put back: releases for {@code WORKER_LOST} are silently dropped
   * and the expired-lease sweep is off, so those jobs stay leased forever (breaks I1 and I4).
   */
  DROP_ON_REAP("drop-on-reap"),
  /**
   * The connection actor's core lets a worker's new session join before its superseded session is
   * reported lost ({@code PlantedConnectionFault.JOIN_BEFORE_PREDECESSOR_LOST}): the scheduler sees two
   * live sessions of one worker, and the old one's loss releases jobs the new one has just reclaimed
   * (breaks the WorkerEvents contract).
   */
  JOIN_BEFORE_LOSS("join-before-loss"),
  /**
   * The connection actor's core never reports a session it reaped for silence as lost ({@code
   * PlantedConnectionFault.REAP_WITHOUT_LOSS}): its jobs are never redelivered (breaks I4).
   */
  REAP_WITHOUT_LOSS("reap-without-loss"),
  /**
   * The store miscounts each run's leased jobs, which fair share divides a lease request's slots by
   * ({@code InMemoryStore.PlantedBug.MISCOUNT_RUN_LEASES}): the oldest run always looks idle, takes every
   * slot, and a run submitted after it waits until it is done (breaks fair share, FS).
   */
  STARVE_LATER_RUNS("starve-later-runs"),
  /**
   * The connection actor's core takes any worker token ({@code PlantedConnectionFault.ACCEPT_ANY_TOKEN}):
   * an impostor joins the fleet (breaks the worker port's security, {@code AUTH:}).
   */
  ACCEPT_ANY_TOKEN("accept-any-token"),
  /**
   * When a job's own lease ends while its backup attempt lives, the store keeps the ended lease in force and
   * forgets the backup ({@code InMemoryStore.PlantedBug.KEEP_ENDED_LEASE_ON_PROMOTE}): breaks fencing by the
   * set of live attempts (I1, I3).
   */
  KEEP_ENDED_LEASE("keep-ended-lease"),
  /**
   * A coordinator's store view never hands its leader epoch to the store ({@link UnfencedStore}), so the
   * store never checks it: a leader frozen past its lease and thawed after a standby took over commits under
   * its old epoch (breaks the leader rule, {@code EPOCH:}).
   */
  SKIP_EPOCH_CHECK("skip-epoch-check");

  private final String cliName;

  PlantedFault(String cliName) {
    this.cliName = cliName;
  }

  /** The bug this fault plants in the store, or null if it is not the store's. */
  public InMemoryStore.PlantedBug storeBug() {
    return switch (this) {
      case COUNT_DUPLICATES -> InMemoryStore.PlantedBug.TAKE_RESENT_RESULTS;
      case SKIP_FENCING -> InMemoryStore.PlantedBug.IGNORE_TOKENS;
      case STARVE_LATER_RUNS -> InMemoryStore.PlantedBug.MISCOUNT_RUN_LEASES;
      case KEEP_ENDED_LEASE -> InMemoryStore.PlantedBug.KEEP_ENDED_LEASE_ON_PROMOTE;
      default -> null;
    };
  }

  /** The bug this fault plants in the connection actor's core ({@code NONE} if it is not the core's). */
  public PlantedConnectionFault connectionFault() {
    return switch (this) {
      case JOIN_BEFORE_LOSS -> PlantedConnectionFault.JOIN_BEFORE_PREDECESSOR_LOST;
      case REAP_WITHOUT_LOSS -> PlantedConnectionFault.REAP_WITHOUT_LOSS;
      case ACCEPT_ANY_TOKEN -> PlantedConnectionFault.ACCEPT_ANY_TOKEN;
      default -> PlantedConnectionFault.NONE;
    };
  }

  /** The name the command line uses, e.g. {@code count-duplicates}. */
  public String cliName() {
    return cliName;
  }

  /**
   * The fault named {@code name} (the command-line name, or the constant's name), ignoring case.
   *
   * @throws IllegalArgumentException if no fault has that name
   */
  public static PlantedFault parse(String name) {
    if (name != null) {
      String n = name.trim().toLowerCase(Locale.ROOT);
      for (PlantedFault f : values()) {
        if (f.cliName.equals(n) || f.name().toLowerCase(Locale.ROOT).equals(n)) {
          return f;
        }
      }
    }
    throw new IllegalArgumentException(
        "planted fault must be one of " + java.util.Arrays.stream(values()).map(PlantedFault::cliName)
            .collect(java.util.stream.Collectors.joining(", ")) + "; got '" + name + "'");
  }
}
