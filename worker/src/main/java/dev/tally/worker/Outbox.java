package dev.tally.worker;

import dev.tally.protocol.Result;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The worker's results that the coordinator has not yet acknowledged, in the order they were made, and
 * the bound on how many there may be.
 *
 * <p>Every finished case's {@code Result} frame stays here until a {@code ResultAck} (of any status)
 * names its attempt; the session sends it when it is made and again after every reconnect. Delivery is
 * at-least-once; the coordinator's fencing and dedup make it count once.
 *
 * <p><b>The bound.</b> Room for one result is a permit of a {@link Semaphore} of {@link #OUTBOX_LIMIT}
 * (or the limit given) permits. A slot reserves one before it starts a case ({@link #awaitRoom()},
 * which blocks while the outbox is full: backpressure, without polling or timed waits), and the permit
 * travels with the case's result into the outbox ({@link #addReserved}) and is released when that result
 * is acknowledged or dropped. A case that ends without a result gives its permit back ({@link
 * #returnRoom()}). So results made by slots, whether in the outbox or on their way to it, plus cases
 * running, never exceed the limit. Answers the session makes itself without running anything (a refused
 * or handed-back Assign, {@link #addUnreserved}) take no permit: each one is an Assign the coordinator
 * sent within its dispatch window, so they are bounded by that window, and blocking the session's own
 * thread on room would stop the acks that make room.
 *
 * <p>Threading: the entries belong to one owner thread (the session's event loop, or the simulation's
 * thread): {@link #addReserved}, {@link #addUnreserved}, {@link #remove}, {@link #dropAll}, {@link
 * #contains}, {@link #keys} and {@link #frames} only there. {@link #awaitRoom}, {@link #tryReserveRoom},
 * {@link #returnRoom}, {@link #size} and {@link #close} are safe from any thread.
 */
public final class Outbox {
  /**
   * Results held (waiting to be acked, or to be sent) before slots stop starting new cases. Acks lag results
   * by the coordinator's group commit (milliseconds); 10,000 covers far more than that at 20,000 evals/s,
   * and caps the outbox's memory at about 10,000 x 8 KiB (a full output tail) = 80 MiB. Only results the
   * session makes itself, without running a case (refused and handed-back Assigns), come on top: each is
   * an Assign the coordinator sent within its dispatch window.
   */
  public static final int OUTBOX_LIMIT = 10_000;

  /**
   * Permits released by {@link #close()} so that every slot blocked in {@link #awaitRoom()} wakes up:
   * more than the most slots a worker may have (a coordinator accepts 4,096), far below the semaphore's
   * own ceiling of {@code Integer.MAX_VALUE}.
   */
  private static final int PERMITS_RELEASED_ON_CLOSE = 1 << 20;

  private record Entry(Result frame, boolean reserved) {}

  private final int limit;
  private final Semaphore room;
  private final Map<JobKey, Entry> entries = new LinkedHashMap<>();
  private final AtomicInteger size = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** An outbox of {@link #OUTBOX_LIMIT} results. */
  public Outbox() {
    this(OUTBOX_LIMIT);
  }

  /**
   * An outbox of {@code limit} results (tests use small ones).
   *
   * @throws IllegalArgumentException if {@code limit < 1}
   */
  public Outbox(int limit) {
    if (limit < 1) {
      throw new IllegalArgumentException("outbox limit must be >= 1, got " + limit);
    }
    this.limit = limit;
    this.room = new Semaphore(limit);
  }

  /** The most results slots may hold here (plus cases running). */
  public int limit() {
    return limit;
  }

  // ---- room (any thread) ----

  /**
   * Blocks until there is room for one more result and reserves it, for a slot about to start a case.
   *
   * @return true with the room reserved; false, reserving nothing, once the outbox is closed
   * @throws InterruptedException if the waiting thread is interrupted (nothing is reserved)
   */
  public boolean awaitRoom() throws InterruptedException {
    room.acquire();
    if (closed.get()) {
      room.release();
      return false;
    }
    return true;
  }

  /** As {@link #awaitRoom()}, without waiting: false if the outbox is full or closed. */
  public boolean tryReserveRoom() {
    if (closed.get() || !room.tryAcquire()) {
      return false;
    }
    return true;
  }

  /** Gives back room reserved for a case that ended without a result (cancelled, or its result dropped). */
  public void returnRoom() {
    room.release();
  }

  /**
   * Wakes every thread waiting for room and refuses room from now on. Idempotent. Entries stay (the
   * owner may still read them).
   */
  public void close() {
    if (closed.compareAndSet(false, true)) {
      room.release(PERMITS_RELEASED_ON_CLOSE);
    }
  }

  /** Results held, read from any thread: the owner's count after its latest change. */
  public int size() {
    return size.get();
  }

  // ---- entries (owner thread) ----

  /**
   * Adds the result of a case whose slot reserved room for it; the room is released when the entry
   * leaves. A second result for the same attempt replaces the first and releases the room it held.
   */
  public void addReserved(JobKey key, Result frame) {
    put(key, new Entry(frame, true));
  }

  /** Adds a result the session made without running anything (a refusal, a hand-back); takes no room. */
  public void addUnreserved(JobKey key, Result frame) {
    put(key, new Entry(frame, false));
  }

  private void put(JobKey key, Entry entry) {
    Entry previous = entries.put(key, entry);
    if (previous == null) {
      size.incrementAndGet();
    } else if (previous.reserved()) {
      room.release();
    }
  }

  /**
   * Drops the result of {@code key} (it was acknowledged), freeing its room.
   *
   * @return true if it was here
   */
  public boolean remove(JobKey key) {
    Entry e = entries.remove(key);
    if (e == null) {
      return false;
    }
    size.decrementAndGet();
    if (e.reserved()) {
      room.release();
    }
    return true;
  }

  /**
   * Drops every result (they belong to a store the coordinator no longer serves), freeing their room.
   *
   * @return how many were dropped
   */
  public int dropAll() {
    int n = entries.size();
    int reserved = 0;
    for (Entry e : entries.values()) {
      if (e.reserved()) {
        reserved++;
      }
    }
    entries.clear();
    size.set(0);
    if (reserved > 0) {
      room.release(reserved);
    }
    return n;
  }

  /** Whether a result of {@code key} is held. */
  public boolean contains(JobKey key) {
    return entries.containsKey(key);
  }

  /** True if no result is held. Owner thread. */
  public boolean isEmpty() {
    return entries.isEmpty();
  }

  /** The attempts whose results are held, oldest first; a read-only view. */
  public Set<JobKey> keys() {
    return Collections.unmodifiableSet(entries.keySet());
  }

  /** The held Result frames, oldest first, as they are (re)sent after a Welcome; a copy. */
  public List<Result> frames() {
    List<Result> out = new ArrayList<>(entries.size());
    for (Entry e : entries.values()) {
      out.add(e.frame());
    }
    return out;
  }
}
