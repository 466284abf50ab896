package dev.tally.core.lead;

/**
 * Where a leading coordinator can be reached, as it advertises it in the leader row: its worker port
 * ({@code HOST:PORT}) and its HTTP API's base URL. A standby names them to whoever it turns away: a
 * worker tries the worker address, a client the API.
 *
 * <p>Text form (the one owner of it): {@code workers=HOST:PORT api=URL}, either part left out when
 * unknown, parts separated by one space. Neither part may hold a space.
 *
 * @param workers the worker port, {@code HOST:PORT}, or null if unknown
 * @param api the HTTP API's base URL (for example {@code http://10.0.0.5:7071}), or null if none or unknown
 */
public record LeaderAddress(String workers, String api) {

  /** A leader that said nothing of where it is. */
  public static final LeaderAddress UNKNOWN = new LeaderAddress(null, null);

  /**
   * @throws IllegalArgumentException if a part is blank or holds white space
   */
  public LeaderAddress {
    check("workers", workers);
    check("api", api);
  }

  private static void check(String what, String part) {
    if (part != null && (part.isBlank() || part.chars().anyMatch(Character::isWhitespace))) {
      throw new IllegalArgumentException("a leader's " + what + " address must be non-blank with no white space, got '"
          + part + "'");
    }
  }

  /** The text stored in the leader row; empty when nothing is known. */
  public String text() {
    StringBuilder b = new StringBuilder();
    if (workers != null) {
      b.append("workers=").append(workers);
    }
    if (api != null) {
      b.append(b.length() > 0 ? " " : "").append("api=").append(api);
    }
    return b.toString();
  }

  /**
   * Reads {@link #text()}'s form. Parts it does not know are skipped, so that a later Tally may advertise
   * more without an older standby failing to read the row.
   *
   * @param text the stored text, or null
   * @return the address; {@link #UNKNOWN} for null or empty text
   */
  public static LeaderAddress parse(String text) {
    if (text == null || text.isBlank()) {
      return UNKNOWN;
    }
    String workers = null;
    String api = null;
    for (String part : text.strip().split(" +")) {
      if (part.startsWith("workers=") && part.length() > "workers=".length()) {
        workers = part.substring("workers=".length());
      } else if (part.startsWith("api=") && part.length() > "api=".length()) {
        api = part.substring("api=".length());
      }
    }
    return new LeaderAddress(workers, api);
  }

  /** For a log line or a problem's detail: the parts known, or "an unknown address". */
  @Override
  public String toString() {
    String t = text();
    return t.isEmpty() ? "an unknown address" : t;
  }
}
