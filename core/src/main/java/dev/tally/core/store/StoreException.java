package dev.tally.core.store;

/** The store could not do what it was asked (I/O, corruption, a broken schema). Nothing was half-applied. */
public class StoreException extends RuntimeException {
  public StoreException(String message, Throwable cause) {
    super(message, cause);
  }

  public StoreException(String message) {
    super(message);
  }
}
