package dev.tally.core;

/**
 * What a model's tokens cost, in USD per million prompt and completion tokens: the one owner of the
 * {@code price} option's grammar ({@code IN,OUT}) and of the cost arithmetic, for a case's cost (the
 * worker) and a run's (the coordinator, from the run's token counters).
 *
 * @param inputPerMillion USD per million prompt tokens, finite and {@code >= 0}
 * @param outputPerMillion USD per million completion tokens, finite and {@code >= 0}
 */
public record Price(double inputPerMillion, double outputPerMillion) {
  /** The options map's key of a run's price. */
  public static final String OPTION = "price";

  /** @throws IllegalArgumentException if a price is negative or not finite */
  public Price {
    if (!(Double.isFinite(inputPerMillion) && Double.isFinite(outputPerMillion) && inputPerMillion >= 0
        && outputPerMillion >= 0)) {
      throw new IllegalArgumentException("prices must be finite and >= 0, got " + inputPerMillion + "," + outputPerMillion);
    }
  }

  /** The cost of this many tokens, in USD. */
  public double costUsd(long promptTokens, long completionTokens) {
    return (promptTokens * inputPerMillion + completionTokens * outputPerMillion) / 1_000_000.0;
  }

  /**
   * Reads {@code IN,OUT}, e.g. {@code 0.15,0.60}.
   *
   * @throws IllegalArgumentException saying what the option must be, if the text is not two numbers >= 0
   */
  public static Price parse(String text) {
    String[] parts = text.split(",", -1);
    if (parts.length == 2) {
      try {
        return new Price(Double.parseDouble(parts[0].strip()), Double.parseDouble(parts[1].strip()));
      } catch (IllegalArgumentException e) { // NumberFormatException is one
        // said below
      }
    }
    throw new IllegalArgumentException("--" + OPTION
        + " must be IN,OUT: USD per million prompt and completion tokens, two numbers >= 0 (e.g. 0.15,0.60), got '"
        + text + "'");
  }
}
