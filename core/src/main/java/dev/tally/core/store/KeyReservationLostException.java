package dev.tally.core.store;

/**
 * A run's creation was to complete an idempotency key that this request no longer holds: its hold passed
 * unrenewed and another request took the key over (or it was released). Nothing was written: the key now
 * belongs to the other request, which makes the run.
 */
public final class KeyReservationLostException extends Exception {
  /**
   * @param scope the key's scope
   * @param key the key
   */
  public KeyReservationLostException(String scope, String key) {
    super("the idempotency key '" + key + "' (scope " + scope + ") is no longer held by this request; nothing was written");
  }
}
