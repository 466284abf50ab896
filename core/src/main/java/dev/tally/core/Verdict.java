package dev.tally.core;

import java.util.Locale;

/** How one case ended, as the evaluator judged it. Written lower-case in results files. */
public enum Verdict {
  /** The case passed (exit 0 for {@code exec}). */
  PASS,
  /** The case ran and failed (non-zero exit for {@code exec}). */
  FAIL,
  /** The case could not be evaluated for a reason of its own (e.g. its command does not exist). */
  ERROR;

  /** The lower-case name used in results files and the store: {@code pass}, {@code fail}, {@code error}. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a lower- or upper-case verdict name.
   *
   * @throws IllegalArgumentException if {@code name} is not {@code pass}, {@code fail} or {@code error}
   */
  public static Verdict parse(String name) {
    for (Verdict v : values()) {
      if (v.name().equalsIgnoreCase(name)) {
        return v;
      }
    }
    throw new IllegalArgumentException("verdict must be pass, fail or error, got '" + name + "'");
  }
}
