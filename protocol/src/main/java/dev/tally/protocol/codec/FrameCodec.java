package dev.tally.protocol.codec;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.tally.protocol.Envelope;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.EncoderException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.handler.codec.MessageToMessageDecoder;
import io.netty.handler.codec.MessageToMessageEncoder;
import io.netty.handler.codec.TooLongFrameException;
import java.util.List;

/**
 * The Netty pipeline pieces that turn a TCP byte stream into Tally {@link Envelope}s and back.
 *
 * <p>Wire format of one frame (the same on both directions; see {@code tally/v1/tally.proto}):
 *
 * <pre>
 *  +----------------------+-------------------------------+
 *  | length: uint32, BE   | Envelope, protobuf-encoded    |
 *  | (4 bytes)            | (exactly {@code length} bytes)|
 *  +----------------------+-------------------------------+
 * </pre>
 *
 * <p>Worked example: a {@code Heartbeat} with {@code seq = 1} travels as 8 bytes,
 *
 * <pre>
 *  BEFORE DECODE (8 bytes)                 AFTER DECODE
 *  +-------------+-------------+           +---------------------------------+
 *  | 00 00 00 04 | 3A 02 08 01 |  ------>  | Envelope{heartbeat{seq: 1}}     |
 *  +-------------+-------------+           +---------------------------------+
 *    length = 4    field 7 (heartbeat), wire type 2, 2 bytes: field 1 (seq) = 1
 * </pre>
 *
 * <p>The length counts only the Envelope's bytes, never the 4-byte prefix itself. Frames may arrive split
 * across reads or several in one read; the decoder reassembles them either way.
 *
 * <p>Refusals (each raises a {@link io.netty.handler.codec.DecoderException} that names the bad value, and
 * the connection's owner is expected to close the connection):
 *
 * <ul>
 *   <li>a length above the frame limit: {@link TooLongFrameException} as soon as the 4 length bytes are
 *       read (fail-fast), before any buffer of that size exists. An HTTP request sent to the worker port
 *       lands here: {@code "GET "} read as a length is 1,195,725,856. An HTTP server's answer (a worker
 *       pointed at a web server) does too, as its subclass {@link HttpAnswerException}: {@code "HTTP"}
 *       read as a length is 1,213,486,160, so that the worker can say what it reached;
 *   <li>bytes that do not parse as an Envelope: {@link CorruptedFrameException} quoting protobuf's error;
 *   <li>an Envelope with no body (including a length-0 frame): {@link CorruptedFrameException} saying
 *       {@code "envelope has no body"}.
 * </ul>
 *
 * <p>The encoder refuses, with an {@link EncoderException}, to send an Envelope larger than the limit: the
 * peer would refuse it and close the connection.
 *
 * <p>Thread-safety: {@link #install} is safe from any thread; each installed frame decoder is stateful and
 * belongs to one channel.
 */
public final class FrameCodec {
  /**
   * The default largest Envelope, in bytes, either side accepts: 4 MiB. Large enough for a case's JSON
   * and an output tail with a wide margin (the worker keeps output tails to a few KiB), small enough that
   * a corrupt or hostile length prefix cannot make a peer reserve much memory per connection.
   */
  public static final int DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;

  /** Size of the big-endian length prefix. */
  public static final int LENGTH_PREFIX_BYTES = 4;

  /** Pipeline names of the installed handlers, so that others can add handlers after them. */
  public static final String FRAME_DECODER = "tally-frame-decoder";

  public static final String ENVELOPE_DECODER = "tally-envelope-decoder";
  public static final String FRAME_ENCODER = "tally-frame-encoder";
  public static final String ENVELOPE_ENCODER = "tally-envelope-encoder";

  /**
   * The length prefix that the start of every HTTP response, {@code "HTTP/1.1 ..."}, reads as: the bytes
   * {@code 48 54 54 50}, "HTTP". No frame limit a peer would set comes near it (1,213,486,160 bytes).
   */
  static final long HTTP_AS_LENGTH = 0x48545450L;

  /** How many leading bytes of a refused frame an error message shows. */
  private static final int QUOTED_BYTES = 16;

  private FrameCodec() {}

  /**
   * Adds the frame and Envelope codecs to the end of {@code pipeline}: inbound handlers after them see
   * {@link Envelope}s, and outbound {@link Envelope}s written after them are framed.
   *
   * @param pipeline a channel's pipeline, with no Tally codec yet
   * @param maxFrameBytes the largest Envelope accepted or sent, in bytes (without the length prefix)
   * @throws IllegalArgumentException if {@code maxFrameBytes} is below 1 or above
   *     {@code Integer.MAX_VALUE - 4}
   */
  public static void install(ChannelPipeline pipeline, int maxFrameBytes) {
    checkMaxFrameBytes(maxFrameBytes);
    pipeline.addLast(FRAME_DECODER, new FrameDecoder(maxFrameBytes));
    pipeline.addLast(ENVELOPE_DECODER, new EnvelopeDecoder());
    pipeline.addLast(FRAME_ENCODER, new LengthFieldPrepender(LENGTH_PREFIX_BYTES));
    pipeline.addLast(ENVELOPE_ENCODER, new EnvelopeEncoder(maxFrameBytes));
  }

  private static void checkMaxFrameBytes(int maxFrameBytes) {
    if (maxFrameBytes < 1 || maxFrameBytes > Integer.MAX_VALUE - LENGTH_PREFIX_BYTES) {
      throw new IllegalArgumentException(
          "maxFrameBytes must be between 1 and " + (Integer.MAX_VALUE - LENGTH_PREFIX_BYTES) + ", got "
              + maxFrameBytes);
    }
  }

  /** Renders up to {@link #QUOTED_BYTES} bytes from {@code index} as hex and printable ASCII. */
  static String quote(ByteBuf buf, int index, int available) {
    int n = Math.min(QUOTED_BYTES, available);
    if (n <= 0) {
      return "(no bytes)";
    }
    StringBuilder ascii = new StringBuilder(n);
    for (int i = 0; i < n; i++) {
      int b = buf.getUnsignedByte(index + i);
      ascii.append(b >= 0x20 && b < 0x7F ? (char) b : '.');
    }
    String hex = ByteBufUtil.hexDump(buf, index, n).replaceAll("(..)(?!$)", "$1 ");
    return hex + " \"" + ascii + "\"" + (available > n ? " ..." : "");
  }

  /**
   * Netty's length-field decoder, configured fail-fast, with a refusal message that quotes the length and
   * the first bytes (so that an HTTP request or a TLS handshake on the worker port is recognizable in the
   * log).
   */
  static final class FrameDecoder extends LengthFieldBasedFrameDecoder {
    /**
     * The first two bytes of a TLS handshake record (content type 22, major version 3), read as the top of
     * a length: a TLS client or server on the other end of a plaintext connection.
     */
    static final long TLS_HANDSHAKE_RECORD = 0x1603;

    private final int maxFrameBytes;

    FrameDecoder(int maxFrameBytes) {
      // maxFrameLength counts the prefix too; initialBytesToStrip drops it; failFast refuses on the
      // length alone, before the (possibly huge) body arrives or any buffer is sized for it.
      super(maxFrameBytes + LENGTH_PREFIX_BYTES, 0, LENGTH_PREFIX_BYTES, 0, LENGTH_PREFIX_BYTES, true);
      this.maxFrameBytes = maxFrameBytes;
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
      int start = in.readerIndex();
      int readable = in.readableBytes();
      long length = readable >= LENGTH_PREFIX_BYTES ? in.getUnsignedInt(start) : -1;
      String head = length > maxFrameBytes ? quote(in, start, readable) : null;
      try {
        return super.decode(ctx, in);
      } catch (TooLongFrameException e) {
        if (head == null) {
          throw e; // the tail of a frame already refused, being discarded
        }
        if (length == HTTP_AS_LENGTH) {
          throw new HttpAnswerException("the peer answered like an HTTP server, not in Tally frames; first bytes: " + head, e);
        }
        String tls = length >>> 16 == TLS_HANDSHAKE_RECORD
            ? "; it looks like a TLS handshake, and this connection speaks plaintext (a coordinator started without"
                + " --tls-cert, or a worker with --tls-ca?)"
            : "";
        throw new TooLongFrameException(
            "frame length " + length + " (0x" + Long.toHexString(length) + ") exceeds the limit of "
                + maxFrameBytes + " bytes" + tls + "; first bytes: " + head,
            e);
      }
    }
  }

  /**
   * The first bytes from the peer read as a frame length spell {@code "HTTP"}: it answers like an HTTP
   * server (a web server or proxy at the address given as a coordinator's), not in Tally frames. A {@link
   * TooLongFrameException}, which it also is, for everyone who does not care which.
   */
  public static final class HttpAnswerException extends TooLongFrameException {
    private static final long serialVersionUID = 1L;

    HttpAnswerException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Parses one whole frame's bytes as an {@link Envelope}. Stateless, hence shareable. */
  @Sharable
  static final class EnvelopeDecoder extends MessageToMessageDecoder<ByteBuf> {
    EnvelopeDecoder() {
      super(ByteBuf.class);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf frame, List<Object> out) {
      int length = frame.readableBytes();
      Envelope envelope;
      try {
        if (frame.hasArray()) {
          envelope = Envelope.parser()
              .parseFrom(frame.array(), frame.arrayOffset() + frame.readerIndex(), length);
        } else {
          envelope = Envelope.parseFrom(frame.nioBuffer());
        }
      } catch (InvalidProtocolBufferException e) {
        throw new CorruptedFrameException(
            "frame of " + length + " bytes is not a valid Envelope: " + e.getMessage() + "; first bytes: "
                + quote(frame, frame.readerIndex(), length),
            e);
      }
      if (envelope.getBodyCase() == Envelope.BodyCase.BODY_NOT_SET) {
        throw new CorruptedFrameException(
            "envelope has no body (frame of " + length + " bytes"
                + (length == 0 ? ")" : "; first bytes: " + quote(frame, frame.readerIndex(), length) + ")"));
      }
      out.add(envelope);
    }
  }

  /** Serializes an {@link Envelope}; the {@link LengthFieldPrepender} after it adds the length. */
  @Sharable
  static final class EnvelopeEncoder extends MessageToMessageEncoder<Envelope> {
    private final int maxFrameBytes;

    EnvelopeEncoder(int maxFrameBytes) {
      super(Envelope.class);
      this.maxFrameBytes = maxFrameBytes;
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, Envelope envelope, List<Object> out) {
      int size = envelope.getSerializedSize();
      if (size > maxFrameBytes) {
        throw new EncoderException(
            "refusing to send a " + envelope.getBodyCase() + " envelope of " + size
                + " bytes: the frame limit is " + maxFrameBytes + " bytes and the peer would close the"
                + " connection");
      }
      out.add(Unpooled.wrappedBuffer(envelope.toByteArray()));
    }
  }
}
