package dev.tally.core.store;

import java.util.Objects;

/**
 * A run to create: what it is submitted with, and a name for people.
 *
 * @param spec what the run is submitted with
 * @param name a name for people (the API's {@code name}); may be empty, at most {@link #MAX_NAME_CHARS}
 */
public record NewRun(RunSpec spec, String name) {
  /** The longest run name: a label for lists and dashboards, not a description. */
  public static final int MAX_NAME_CHARS = 256;

  /**
   * @throws IllegalArgumentException if the name is longer than {@link #MAX_NAME_CHARS}
   */
  public NewRun {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(name, "name");
    if (name.length() > MAX_NAME_CHARS) {
      throw new IllegalArgumentException("a run name is at most " + MAX_NAME_CHARS + " characters, got " + name.length());
    }
  }

  /** A run with no name. */
  public static NewRun of(RunSpec spec) {
    return new NewRun(spec, "");
  }
}
