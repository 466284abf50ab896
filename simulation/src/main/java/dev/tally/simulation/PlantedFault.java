package dev.tally.simulation;

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
  DROP_ON_REAP("drop-on-reap");

  private final String cliName;

  PlantedFault(String cliName) {
    this.cliName = cliName;
  }

  /** The bug this fault plants in the store, or null if it is not the store's. */
  public InMemoryStore.PlantedBug storeBug() {
    return switch (this) {
      case COUNT_DUPLICATES -> InMemoryStore.PlantedBug.TAKE_RESENT_RESULTS;
      case SKIP_FENCING -> InMemoryStore.PlantedBug.IGNORE_TOKENS;
      default -> null;
    };
  }

  /** The name the command line uses: {@code count-duplicates}, {@code skip-fencing} or {@code drop-on-reap}. */
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
        "planted fault must be one of count-duplicates, skip-fencing, drop-on-reap; got '" + name + "'");
  }
}
