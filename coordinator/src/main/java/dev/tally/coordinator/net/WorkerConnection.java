package dev.tally.coordinator.net;

import dev.tally.core.Ticker;
import dev.tally.protocol.Envelope;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.EncoderException;
import java.io.IOException;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection actor's Netty driver: one per worker socket, it feeds the socket's events to the
 * session's {@link ConnectionCore} (which decides everything: see its class doc for the life of a session)
 * and carries out what the core decides on the channel, as its {@link ConnectionPort}.
 *
 * <p>What it adds to the core is only Netty: the frame codec before it yields Envelopes; each frame, and
 * each sweep of its event loop's {@link ConnectionSweep} (every {@link WorkerServer.Settings#reapCheckPeriod()}),
 * reaches the core with the ticker's reading; exceptions are sorted into the core's {@link
 * ConnectionCore.ErrorKind}s; pausing reading is turning auto-read off; and the wait for a
 * superseded session is a callback on its end that hops back to this channel's event loop.
 *
 * <p>Thread-safety: the core and this driver are touched only on the channel's event loop, so neither holds
 * a lock. Other threads reach them only through {@link #onLoop}, which hops there.
 */
final class WorkerConnection extends ChannelInboundHandlerAdapter implements ConnectionPort, ConnectionSweep.Swept {
  private static final Logger log = LoggerFactory.getLogger(WorkerConnection.class);

  private final WorkerServer server;
  private final Ticker ticker;
  private final Channel channel;
  private final ConnectionCore core;
  /** The sweep of this channel's event loop, once it is active; null after it went inactive. */
  private ConnectionSweep sweep;

  WorkerConnection(WorkerServer server, ConnectionCore.Context context, Channel channel) {
    this.server = server;
    this.ticker = context.settings().ticker();
    this.channel = channel;
    this.core = new ConnectionCore(context, this, this::onLoop, String.valueOf(channel.remoteAddress()),
        UUID.randomUUID().toString(), PlantedConnectionFault.NONE);
  }

  // ---- Netty's events, fed to the core ----

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    core.onActive(ticker.nanos());
    // Sweeping from the start rather than from the Welcome changes nothing: the core ignores heartbeat
    // ticks until it joined, and reaps a session that never says Hello the same way as a silent one.
    sweep = server.sweepOf(ctx.executor());
    sweep.add(this);
    ctx.fireChannelActive();
  }

  /**
   * Called by the loop's {@link ConnectionSweep} every reap-check period: the core's {@link
   * ConnectionCore#onSweep} (its liveness check, and its heartbeat tick when due). A failure there is an
   * internal error of this connection: the core closes it, and if even that fails, the sweep does.
   */
  @Override
  public void onSweep() {
    try {
      core.onSweep(ticker.nanos());
    } catch (RuntimeException e) {
      core.onError(ConnectionCore.ErrorKind.INTERNAL, e);
    }
  }

  @Override
  public void closeAfterSweepFailure(Throwable failure) {
    channel.close();
  }

  @Override
  public String toString() {
    return core.peer();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    core.onFrame((Envelope) msg, ticker.nanos()); // the frame codec before us yields only Envelopes
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    ConnectionCore.ErrorKind kind;
    if (cause instanceof DecoderException) {
      kind = ConnectionCore.ErrorKind.MALFORMED_FRAME;
    } else if (cause instanceof EncoderException) {
      kind = ConnectionCore.ErrorKind.CANNOT_SEND;
    } else if (cause instanceof IOException) {
      kind = ConnectionCore.ErrorKind.IO_ERROR;
    } else {
      kind = ConnectionCore.ErrorKind.INTERNAL;
    }
    core.onError(kind, cause);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (sweep != null) {
      sweep.remove(this);
      sweep = null;
    }
    core.onInactive(server.isClosing());
    ctx.fireChannelInactive();
  }

  // ---- the core's port ----

  @Override
  public void write(Envelope frame) {
    channel.write(frame, channel.voidPromise());
  }

  @Override
  public void flush() {
    channel.flush();
  }

  @Override
  public boolean isOpen() {
    return channel.isActive();
  }

  @Override
  public void close() {
    channel.close();
  }

  @Override
  public void pauseReading() {
    channel.config().setAutoRead(false);
  }

  @Override
  public void resumeReading() {
    channel.config().setAutoRead(true);
  }

  @Override
  public void awaitPredecessor(CompletionStage<Void> predecessorEnded) {
    predecessorEnded.whenComplete((ignored, error) -> onLoop(() -> core.onPredecessorEnded(ticker.nanos())));
  }

  // ---- from other threads ----

  /** Closes the session with {@code reason} (a Goodbye first), from any thread. */
  void closeFromAnyThread(String reason) {
    onLoop(() -> core.close(reason));
  }

  /**
   * Runs {@code task} on this connection's event loop: now if already there, else queued. Dropped if the
   * loop has shut down (the server is closing; the session's end is reported by then).
   */
  private void onLoop(Runnable task) {
    EventLoop loop = channel.eventLoop();
    if (loop.inEventLoop()) {
      task.run();
      return;
    }
    try {
      loop.execute(task);
    } catch (RejectedExecutionException e) {
      log.debug("dropped a task for the connection from {}: its event loop has shut down", core.peer());
    }
  }
}
