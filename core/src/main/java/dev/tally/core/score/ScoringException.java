package dev.tally.core.score;

/**
 * A case that a scorer cannot judge: a field it needs is missing or in the wrong shape. The message names
 * the scorer and the field ({@code "numeric: case field \"target\" is not a number: \"ten\""}). The case's
 * fault, not the answer's: its outcome is an error, not a fail.
 */
public final class ScoringException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what is wrong, naming the scorer and the case field
   */
  public ScoringException(String message) {
    super(message);
  }
}
