package dev.tally.coordinator.net;

import dev.tally.core.Ticker;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.OptionalSslHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.util.ReferenceCountUtil;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.SocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first handler of a TLS worker port's connection: it looks at the first bytes (Netty's {@link
 * OptionalSslHandler}) and
 *
 * <ul>
 *   <li>if they begin a TLS handshake, puts a TLS handler in its place: the frames travel inside TLS;
 *   <li>if they do not and the peer is on this machine (a loopback address, or one of this host's own
 *       addresses: the local workers {@code tally run} starts), steps aside: its traffic never leaves the
 *       machine, so TLS would protect nothing, and the worker token is still required of it;
 *   <li>if they do not and the peer is elsewhere, answers in plaintext with a {@code Goodbye} of code {@code
 *       TLS_REQUIRED} (so the worker can say what is wrong and stop, rather than retry for ever) and closes,
 *       reading nothing of what it sent. Logged once per remote address per {@link RefusalLog#PERIOD}.
 * </ul>
 *
 * <p>Thread-safety: one instance per channel, on its event loop.
 */
final class TlsUnlessLocal extends OptionalSslHandler {
  private static final Logger log = LoggerFactory.getLogger(TlsUnlessLocal.class);

  private final RefusalLog refusals;
  private final Ticker ticker;

  TlsUnlessLocal(SslContext tls, RefusalLog refusals, Ticker ticker) {
    super(tls);
    this.refusals = refusals;
    this.ticker = ticker;
  }

  @Override
  protected ChannelHandler newNonSslHandler(ChannelHandlerContext ctx) {
    return onThisMachine(ctx.channel().remoteAddress()) ? null : new PlaintextRefusal();
  }

  /** Whether a peer at {@code address} is on this machine: loopback, or an address of one of its interfaces. */
  static boolean onThisMachine(SocketAddress address) {
    if (!(address instanceof InetSocketAddress inet) || inet.getAddress() == null) {
      return false;
    }
    InetAddress ip = inet.getAddress();
    if (ip.isLoopbackAddress() || ip.isAnyLocalAddress()) {
      return true;
    }
    try {
      return NetworkInterface.getByInetAddress(ip) != null;
    } catch (SocketException e) {
      return false;
    }
  }

  /** Answers a plaintext peer from elsewhere with a Goodbye it can read, and closes. */
  private final class PlaintextRefusal extends ChannelInboundHandlerAdapter {
    private boolean refused;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ReferenceCountUtil.release(msg); // nothing a refused peer says is read
      if (refused) {
        return;
      }
      refused = true;
      String peer = String.valueOf(ctx.channel().remoteAddress());
      long leftOut = refusals.shouldLog(RefusalLog.addressOf(peer), ticker.nanos());
      if (leftOut >= 0) {
        log.warn("refused a plaintext connection from {}: this worker port speaks TLS (a worker elsewhere needs"
            + " tally worker --tls-ca){}", peer, RefusalLog.leftOut(leftOut));
      }
      Envelope goodbye = Envelope.newBuilder().setGoodbye(Goodbye.newBuilder()
          .setReason("this coordinator's worker port speaks TLS: start the worker with --tls-ca CA_FILE (the CA"
              + " that signed the coordinator's certificate)")
          .setCode(Goodbye.Code.TLS_REQUIRED)).build();
      // From the channel's tail, so that the frame encoders behind this handler frame it.
      ctx.channel().writeAndFlush(goodbye).addListener(ChannelFutureListener.CLOSE);
    }
  }
}
