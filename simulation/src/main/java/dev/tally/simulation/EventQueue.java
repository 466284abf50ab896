package dev.tally.simulation;

import java.util.PriorityQueue;

/**
 * The simulation's agenda: actions at virtual times, taken earliest first; two actions at the same time in
 * the order they were scheduled (by a sequence number, never by hash or identity), so that one seed always
 * gives one order.
 *
 * <p>Thread-safety: none; one history, one thread.
 */
final class EventQueue {
  /** One scheduled action. */
  record Event(long atMillis, long seq, Runnable action) implements Comparable<Event> {
    @Override
    public int compareTo(Event o) {
      int c = Long.compare(atMillis, o.atMillis);
      return c != 0 ? c : Long.compare(seq, o.seq);
    }
  }

  private final PriorityQueue<Event> queue = new PriorityQueue<>();
  private long seq;

  /** Schedules {@code action} at {@code atMillis} (virtual milliseconds since the history began). */
  void at(long atMillis, Runnable action) {
    queue.add(new Event(atMillis, seq++, action));
  }

  /** The earliest event, removed, or null if there is none. */
  Event poll() {
    return queue.poll();
  }

  /** The earliest event, left in place, or null. */
  Event peek() {
    return queue.peek();
  }

  /** How many events have been scheduled so far. */
  long scheduled() {
    return seq;
  }
}
