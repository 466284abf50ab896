package dev.tally.core.store;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * What an acknowledged result survives: the promise a store keeps when it commits a batch, and so when the
 * coordinator may ack (results are acked only after their commit, invariant I5). The coordinator's default
 * is {@code CoordinatorBuilder}'s; each store maps a level onto its database's setting when it opens (the
 * SQL store's dialect is the one owner of that mapping).
 *
 * <p>With group commit the price of {@link #FULL} is paid once per batch, not once per eval: a commit
 * carries every result that arrived while the previous one was being written.
 *
 * <p>Thread-safety: an enum; immutable.
 */
public enum Durability {
  /**
   * A commit returns only once it is on stable storage: an acknowledged result survives a power loss or a
   * kernel crash of the store's machine. SQLite: {@code synchronous=FULL} in WAL mode (the WAL is fsynced
   * at every commit); PostgreSQL: {@code synchronous_commit=on} (its default).
   */
  FULL("full"),
  /**
   * A commit returns once the database has handed it to the operating system: an acknowledged result
   * survives a crash of the coordinator's process ({@code kill -9}), but the last commits before a power
   * loss or a kernel crash may be lost. SQLite: {@code synchronous=NORMAL} in WAL mode (fsync only at
   * checkpoints); PostgreSQL: {@code synchronous_commit=off} (the server's WAL writer flushes a moment
   * later; a server crash loses the last commits, never consistency).
   */
  RELAXED("relaxed");

  private final String configName;

  Durability(String configName) {
    this.configName = configName;
  }

  /** The name configuration uses: {@code full} or {@code relaxed}. */
  public String configName() {
    return configName;
  }

  /**
   * The level named {@code name}, ignoring case.
   *
   * @throws IllegalArgumentException if {@code name} is not {@code full} or {@code relaxed}, naming both
   */
  public static Durability parse(String name) {
    for (Durability d : values()) {
      if (d.configName.equals(name.toLowerCase(Locale.ROOT))) {
        return d;
      }
    }
    throw new IllegalArgumentException("unknown durability '" + name + "'; expected one of "
        + Arrays.stream(values()).map(Durability::configName).collect(Collectors.joining(", ")));
  }
}
