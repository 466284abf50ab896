package dev.tally.core.store;

import java.util.Locale;

/** Where a run is in its life. {@code FINISHED} and {@code CANCELLED} are terminal: every job has ended. */
public enum RunState {
  /** Some job has not ended; the run's jobs may be leased. */
  RUNNING,
  /** Every job ended on its own: recorded with a verdict, or failed with why. */
  FINISHED,
  /** Cancelled: the jobs that had not ended were cancelled, and none of them is leased or recorded again. */
  CANCELLED;

  /** Whether every job of the run has ended. */
  public boolean terminal() {
    return this != RUNNING;
  }

  /** The state's name in the store and the API: {@code running}, {@code finished}, {@code cancelled}. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The state named {@code name} ({@link #wireName()}).
   *
   * @throws IllegalArgumentException if no state has that name
   */
  public static RunState parse(String name) {
    for (RunState s : values()) {
      if (s.wireName().equals(name)) {
        return s;
      }
    }
    throw new IllegalArgumentException("no run state '" + name + "' (running, finished or cancelled)");
  }
}
