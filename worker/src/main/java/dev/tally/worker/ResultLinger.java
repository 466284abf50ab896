package dev.tally.worker;

import java.time.Duration;

/**
 * Whether a case's result should wait a moment for the results right behind it, so that one frame write
 * carries them all: one system call at the worker and one wake-up and read at the coordinator for every
 * result that ended in the window, instead of one each. A result lingers only when results are coming
 * thick, that is when another case ended less than the linger ago and more cases wait in the slots' queue
 * behind this one; a result that ends alone, or that leaves nothing queued, goes at once. So a case that
 * takes seconds is never held back, and a run's last results are not either.
 *
 * <p>The decision only: the caller ({@link WorkerSession}) delays its drain of ended cases by {@link
 * #linger()} when told to. Time is passed in (the worker's ticker's nanos).
 *
 * <p>Thread-safety: {@link #ended} is called from every slot thread; it is synchronized (a few
 * nanoseconds uncontended, and contended only by cases ending at the same instant).
 */
final class ResultLinger {
  /**
   * The default linger: 1 ms, the event loop's timer granularity. Results that end within 1 ms of each
   * other come from cases that took about that long, and their worker still holds its next assignments,
   * so the delay costs the coordinator nothing it could have used.
   */
  static final Duration DEFAULT = Duration.ofMillis(1);

  private final Duration linger;
  private final long lingerNanos;
  private long lastEndNanos;
  private boolean anyEnded;

  /** @throws IllegalArgumentException if {@code linger} is negative */
  ResultLinger(Duration linger) {
    if (linger.isNegative()) {
      throw new IllegalArgumentException("the result linger must be >= 0, got " + linger);
    }
    this.linger = linger;
    this.lingerNanos = linger.toNanos();
  }

  /** How long a lingering result waits. */
  Duration linger() {
    return linger;
  }

  /**
   * A case ended.
   *
   * @param nowNanos when, on the worker's ticker
   * @param queuedBehind how many assignments wait in the slots' queue for a slot
   * @return whether its result should wait {@link #linger()} for the ones behind it
   */
  synchronized boolean ended(long nowNanos, int queuedBehind) {
    boolean thick = anyEnded && nowNanos - lastEndNanos < lingerNanos && queuedBehind > 0;
    lastEndNanos = nowNanos;
    anyEnded = true;
    return thick;
  }
}
