package dev.tally.core.store;

import dev.tally.core.InfraFailure;
import java.util.Locale;

/**
 * The words every {@link Store} uses for how an attempt ended and why a job ended failed, so that all
 * implementations (and the contract tests that read them) agree. Stateless and thread-safe.
 */
public final class FailureReasons {
  private FailureReasons() {}

  /** An attempt's ending as stored in its history: the failure kind in lower case, e.g. {@code worker_lost}. */
  public static String ending(InfraFailure.Kind kind) {
    return kind.name().toLowerCase(Locale.ROOT);
  }

  /**
   * Why a job that used all its attempts ended failed.
   *
   * @param attempts how many attempts it had, at least 1
   * @param ending how the last one ended ({@link #ending})
   * @param detail the last failure's detail; may be empty
   */
  public static String outOfAttempts(int attempts, String ending, String detail) {
    String last = detail.isEmpty() ? ending : ending + ": " + detail;
    return "ended failed after " + attempts + (attempts == 1 ? " attempt" : " attempts") + "; the last ended with "
        + last;
  }

  /**
   * Why a poison case ended failed.
   *
   * @param lostStreak how many attempts in a row ended with their worker lost while the case ran
   * @param detail the last loss's detail
   */
  public static String poison(int lostStreak, String detail) {
    return "poison: " + lostStreak + " attempts in a row ended with their worker lost while the case ran; the last: "
        + detail;
  }
}
