package dev.tally.store;

import dev.tally.core.lead.LeaderRow;
import dev.tally.core.store.StaleEpochException;
import dev.tally.core.store.Store;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The leader row in SQL ({@code coordinator_leader}, {@code leader_epochs}; migration V20): reading it,
 * swapping it (taking or renewing the lead), and the fence every write transaction begins with. The one
 * owner of this SQL and of the fence's rule for the SQL stores ({@link JdbcStore} calls it); the statements are written in SQL that
 * SQLite and PostgreSQL both take. The in-memory store keeps the same rule over its own row.
 *
 * <p><b>The fence.</b> A write transaction of a store whose {@link Store#writeEpoch() write epoch} is a
 * leader's begins with the dialect's {@link Dialect#fence() fence}: a query that finds the row only while it
 * names that epoch, and holds it so until the commit (PostgreSQL updates the row, which locks it; SQLite
 * reads it under the write lock its transaction already holds). No row means another coordinator took the
 * lead: {@link StaleEpochException}, and the caller rolls back, so nothing is written. A fenced write is
 * then counted against its epoch ({@link #COUNT_WRITE}), which shows that a deposed leader wrote nothing
 * after the takeover.
 *
 * <p>Thread-safety: static methods over the caller's connection; the caller holds its write lock.
 */
final class LeaderSql {
  static final String COUNT_WRITE = "UPDATE leader_epochs SET writes = writes + 1 WHERE epoch = ?";
  static final String SELECT = "SELECT epoch, holder, address, expires_at_millis FROM coordinator_leader WHERE id = 1";
  /** The compare-and-set of the whole row; a NULL holder (no leader yet) compares as the empty string. */
  static final String SWAP = "UPDATE coordinator_leader SET epoch = ?, holder = ?, address = ?, expires_at_millis = ?"
      + " WHERE id = 1 AND epoch = ? AND COALESCE(holder, '') = ? AND expires_at_millis = ?";
  static final String INSERT_EPOCH =
      "INSERT INTO leader_epochs (epoch, holder, address, began_at_millis) VALUES (?, ?, ?, ?)";
  static final String SELECT_EPOCHS = "SELECT epoch, holder, address, began_at_millis, writes FROM leader_epochs ORDER BY epoch";

  private LeaderSql() {}

  /**
   * Fences one write transaction, inside it, first thing.
   *
   * @param fence the dialect's {@link Dialect#fence()}, prepared
   * @param epoch the store instance's write epoch
   * @throws StaleEpochException if {@code epoch} is {@link Store#NOT_LEADING} or not the row's
   * @throws SQLException if the database fails
   */
  static void fence(PreparedStatement fence, PreparedStatement countWrite, PreparedStatement select, long epoch)
      throws SQLException {
    if (epoch == Store.UNFENCED) {
      return;
    }
    if (epoch != Store.NOT_LEADING) {
      fence.setLong(1, epoch);
      boolean current;
      try (ResultSet rs = fence.executeQuery()) {
        current = rs.next();
      }
      if (current) {
        countWrite.setLong(1, epoch);
        countWrite.executeUpdate();
        return;
      }
    }
    LeaderRow row = read(select);
    throw new StaleEpochException(epoch, row.epoch(), row.address());
  }

  /** Reads the row with a prepared {@link #SELECT}. */
  static LeaderRow read(PreparedStatement select) throws SQLException {
    try (ResultSet rs = select.executeQuery()) {
      if (!rs.next()) {
        throw new SQLException("coordinator_leader has no row (the V20 migration inserts it)");
      }
      return new LeaderRow(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getLong(4));
    }
  }

  /**
   * Reads every epoch that led, oldest first, in one statement (so one snapshot: the newest is the row's
   * epoch, since a takeover inserts it in the swap's transaction, and every older one's count is final).
   */
  static java.util.List<dev.tally.core.lead.LeaderEpoch> readEpochs(Connection c) throws SQLException {
    java.util.List<dev.tally.core.lead.LeaderEpoch> epochs = new java.util.ArrayList<>();
    try (PreparedStatement s = c.prepareStatement(SELECT_EPOCHS);
        ResultSet rs = s.executeQuery()) {
      while (rs.next()) {
        epochs.add(new dev.tally.core.lead.LeaderEpoch(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getLong(4), rs.getLong(5)));
      }
    }
    return epochs;
  }

  /** Reads the row on {@code c}. */
  static LeaderRow read(Connection c) throws SQLException {
    try (PreparedStatement s = c.prepareStatement(SELECT)) {
      return read(s);
    }
  }

  /**
   * Swaps the row inside the caller's write transaction; a takeover also records its epoch in {@code
   * leader_epochs}.
   *
   * @param nowMillis the store's clock, for the epoch's start
   * @return whether the row was still {@code expected} (and is now {@code next})
   * @throws IllegalArgumentException as {@link LeaderRow#checkSwap}
   */
  static boolean swap(Connection c, LeaderRow expected, LeaderRow next, long nowMillis) throws SQLException {
    LeaderRow.checkSwap(expected, next);
    try (PreparedStatement s = c.prepareStatement(SWAP)) {
      s.setLong(1, next.epoch());
      s.setString(2, next.holder());
      s.setString(3, next.address());
      s.setLong(4, next.expiresAtMillis());
      s.setLong(5, expected.epoch());
      s.setString(6, expected.holder() == null ? "" : expected.holder());
      s.setLong(7, expected.expiresAtMillis());
      if (s.executeUpdate() != 1) {
        return false;
      }
    }
    if (next.epoch() != expected.epoch()) {
      try (PreparedStatement s = c.prepareStatement(INSERT_EPOCH)) {
        s.setLong(1, next.epoch());
        s.setString(2, next.holder());
        s.setString(3, next.address());
        s.setLong(4, nowMillis);
        s.executeUpdate();
      }
    }
    return true;
  }
}
