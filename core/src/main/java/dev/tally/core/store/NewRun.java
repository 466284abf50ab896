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
   * @throws IllegalArgumentException if the name is not a valid one ({@link #nameProblem})
   */
  public NewRun {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(name, "name");
    nameProblem(name).ifPresent(p -> {
      throw new IllegalArgumentException(p);
    });
  }

  /**
   * What is wrong with {@code name} as a run's name, or empty if nothing: at most {@link #MAX_NAME_CHARS}
   * characters, and none that does not show as itself ({@link dev.tally.core.HiddenCharacters}: a name is
   * printed in terminals and pages, where an escape sequence in it would act and a bidirectional override
   * would disguise it).
   */
  public static java.util.Optional<String> nameProblem(String name) {
    if (name.length() > MAX_NAME_CHARS) {
      return java.util.Optional.of("a run name is at most " + MAX_NAME_CHARS + " characters, got " + name.length());
    }
    return dev.tally.core.HiddenCharacters.problem(name).map(p -> "a run name " + p);
  }

  /** A run with no name. */
  public static NewRun of(RunSpec spec) {
    return new NewRun(spec, "");
  }
}
