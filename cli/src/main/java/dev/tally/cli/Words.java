package dev.tally.cli;

/**
 * Counts in the words people read: {@code 1 case}, {@code 2 cases}, {@code 0 cases}. Every line the
 * commands print with a count of something goes through here, so that none says "1 cases".
 *
 * <p>Thread-safety: stateless.
 */
public final class Words {
  private Words() {}

  /**
   * {@code n} and {@code noun}, the noun in the plural unless {@code n} is 1 (or -1).
   *
   * @param noun a noun whose plural takes an {@code s} ({@code case}, {@code worker}, {@code slot})
   */
  public static String count(long n, String noun) {
    return n + " " + (Math.abs(n) == 1 ? noun : noun + "s");
  }
}
