package dev.tally.coordinator.net;

import dev.tally.protocol.Envelope;
import java.util.concurrent.CompletionStage;

/**
 * What a {@link ConnectionCore} asks of the world around it: its connection to the worker and the thread
 * that owns it. The core decides, the port carries out. In production {@code WorkerConnection} implements
 * it over a Netty channel; a simulation implements it over its virtual network, and a test over a list.
 *
 * <p>Contract: the core calls every method on the session's owner thread, and none may block. A method may
 * call back into the core before it returns (Netty reports a write that cannot be encoded through
 * {@code exceptionCaught} at once): the core is written for that.
 */
public interface ConnectionPort {

  /**
   * Queues {@code frame} for the worker without flushing. A frame that cannot be sent (larger than the
   * worker's frame limit, say) is reported back as {@link ConnectionCore.ErrorKind#CANNOT_SEND}.
   */
  void write(Envelope frame);

  /** Sends what {@link #write} queued. */
  void flush();

  /** Whether frames written now can still leave: the connection has not closed at this end. */
  boolean isOpen();

  /**
   * Closes the connection (whatever was flushed before is sent first, best effort). The driver then
   * reports {@link ConnectionCore#onInactive}, later or from within this call.
   */
  void close();

  /** Stops handing the core frames until {@link #resumeReading}; a few already read may still come. */
  void pauseReading();

  /** Hands the core frames again after {@link #pauseReading}. */
  void resumeReading();

  /**
   * Once {@code predecessorEnded} completes (on whatever thread completes it), calls {@link
   * ConnectionCore#onPredecessorEnded} on this session's owner thread with the time then. If it has
   * already completed, the call may come from within this one.
   */
  void awaitPredecessor(CompletionStage<Void> predecessorEnded);
}
