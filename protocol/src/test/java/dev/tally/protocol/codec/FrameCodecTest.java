package dev.tally.protocol.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.tally.protocol.Assign;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.Heartbeat;
import dev.tally.protocol.Outcome;
import dev.tally.protocol.Result;
import dev.tally.protocol.Verdict;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.EncoderException;
import io.netty.handler.codec.TooLongFrameException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class FrameCodecTest {

  private static EmbeddedChannel channel(int maxFrameBytes) {
    EmbeddedChannel ch = new EmbeddedChannel();
    FrameCodec.install(ch.pipeline(), maxFrameBytes);
    return ch;
  }

  /** Encodes through the real outbound pipeline and returns the bytes that would go on the wire. */
  private static byte[] wireBytes(List<Envelope> envelopes) {
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    for (Envelope e : envelopes) {
      ch.writeOutbound(e);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (ByteBuf buf; (buf = ch.readOutbound()) != null; ) {
      byte[] bytes = new byte[buf.readableBytes()];
      buf.readBytes(bytes);
      buf.release();
      out.writeBytes(bytes);
    }
    ch.finishAndReleaseAll();
    return out.toByteArray();
  }

  private static List<Envelope> readAll(EmbeddedChannel ch) {
    List<Envelope> got = new ArrayList<>();
    for (Envelope e; (e = ch.readInbound()) != null; ) {
      got.add(e);
    }
    return got;
  }

  private static Envelope heartbeat(long seq) {
    return Envelope.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSeq(seq)).build();
  }

  @Test
  void encodesTheWorkedExampleFromTheJavadoc() {
    assertThat(wireBytes(List.of(heartbeat(1))))
        .containsExactly(0x00, 0x00, 0x00, 0x04, 0x3A, 0x02, 0x08, 0x01);
  }

  @Property(tries = 200)
  void framesSplitAndCoalescedAtArbitraryBoundariesDecodeToTheSameEnvelopes(
      @ForAll("envelopes") List<Envelope> sent,
      @ForAll @Size(min = 1, max = 40) List<@IntRange(min = 1, max = 97) Integer> chunkSizes) {
    byte[] wire = wireBytes(sent);
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    int offset = 0;
    for (int i = 0; offset < wire.length; i++) {
      int n = Math.min(chunkSizes.get(i % chunkSizes.size()), wire.length - offset);
      ch.writeInbound(Unpooled.copiedBuffer(wire, offset, n));
      offset += n;
    }
    assertThat(readAll(ch)).containsExactlyElementsOf(sent);
    assertThat(ch.finish()).isFalse();
  }

  @Property(tries = 50)
  void manyFramesInOneReadDecodeInOrder(@ForAll("envelopes") List<Envelope> sent) {
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    ch.writeInbound(Unpooled.wrappedBuffer(wireBytes(sent)));
    assertThat(readAll(ch)).containsExactlyElementsOf(sent);
  }

  @Provide
  Arbitrary<List<Envelope>> envelopes() {
    Arbitrary<Envelope> heartbeats = Arbitraries.longs().map(FrameCodecTest::heartbeat);
    Arbitrary<Envelope> results =
        Combinators.combine(
                Arbitraries.longs(),
                Arbitraries.longs(),
                Arbitraries.of(Verdict.PASS, Verdict.FAIL, Verdict.ERROR),
                Arbitraries.strings().ofMaxLength(300))
            .as((job, token, verdict, tail) -> Envelope.newBuilder()
                .setResult(Result.newBuilder()
                    .setJobId(job)
                    .setToken(token)
                    .setOutcome(Outcome.newBuilder().setVerdict(verdict).setOutputTail(tail)))
                .build());
    Arbitrary<Envelope> assigns =
        Combinators.combine(Arbitraries.longs(), Arbitraries.bytes().array(byte[].class).ofMaxSize(2000))
            .as((job, json) -> Envelope.newBuilder()
                .setAssign(Assign.newBuilder().setJobId(job).setCaseJson(ByteString.copyFrom(json)))
                .build());
    return Arbitraries.oneOf(heartbeats, results, assigns).list().ofMaxSize(30);
  }

  @Test
  void refusesAnOversizedLengthPrefixBeforeAllocatingForIt() {
    AtomicInteger largestAllocation = new AtomicInteger();
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    ch.config().setAllocator(new AbstractByteBufAllocator(false) {
      @Override
      protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        largestAllocation.accumulateAndGet(initialCapacity, Math::max);
        return Unpooled.buffer(initialCapacity, maxCapacity);
      }

      @Override
      protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        largestAllocation.accumulateAndGet(initialCapacity, Math::max);
        return Unpooled.directBuffer(initialCapacity, maxCapacity);
      }

      @Override
      public boolean isDirectBufferPooled() {
        return false;
      }
    });

    // Only the 4 length bytes: fail-fast must refuse now, not wait for 2 GiB to arrive.
    assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {0x7F, -1, -1, -1})))
        .isInstanceOf(TooLongFrameException.class)
        .hasMessageContaining("2147483647")
        .hasMessageContaining("exceeds the limit of 4194304 bytes");
    assertThat(largestAllocation.get()).isLessThan(64 * 1024);
    assertThat(readAll(ch)).isEmpty();
  }

  @Test
  void refusesALengthOneByteAboveTheLimitAndAcceptsOneAtTheLimit() {
    int max = 64;
    Envelope atLimit = Envelope.newBuilder()
        .setGoodbye(Goodbye.newBuilder().setReason("x".repeat(max - 4)))
        .build();
    assertThat(atLimit.getSerializedSize()).isEqualTo(max);
    EmbeddedChannel ok = channel(max);
    ok.writeInbound(Unpooled.wrappedBuffer(wireBytes(List.of(atLimit))));
    assertThat(readAll(ok)).containsExactly(atLimit);

    EmbeddedChannel tooLong = channel(max);
    assertThatThrownBy(() -> tooLong.writeInbound(Unpooled.wrappedBuffer(new byte[] {0, 0, 0, 65})))
        .isInstanceOf(TooLongFrameException.class)
        .hasMessageContaining("frame length 65");
  }

  @Test
  void anHttpRequestIsRefusedAsATooLongFrameThatQuotesIt() {
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    byte[] http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(http)))
        .isInstanceOf(TooLongFrameException.class)
        .hasMessageContaining("1195725856")
        .hasMessageContaining("\"GET / HTTP/1.1..");
  }

  @Test
  void anHttpServersAnswerIsRecognisedAsSuchAndQuoted() {
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    byte[] http = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(http)))
        .isInstanceOf(FrameCodec.HttpAnswerException.class)
        .isInstanceOf(TooLongFrameException.class)
        .hasMessageContaining("answered like an HTTP server")
        .hasMessageContaining("\"HTTP/1.1 400 Bad\"");

    EmbeddedChannel other = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    assertThatThrownBy(() -> other.writeInbound(Unpooled.wrappedBuffer("HTTQ".getBytes(StandardCharsets.US_ASCII))))
        .as("one byte off is only a frame too long")
        .isInstanceOf(TooLongFrameException.class)
        .isNotInstanceOf(FrameCodec.HttpAnswerException.class);
  }

  @Test
  void refusesBytesThatAreNotAnEnvelopeQuotingTheParseError() {
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    // A 5-byte frame holding an unterminated varint tag.
    byte[] garbage = {0, 0, 0, 5, -1, -1, -1, -1, -1};
    assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(garbage)))
        .isInstanceOf(CorruptedFrameException.class)
        .hasMessageContaining("frame of 5 bytes is not a valid Envelope")
        .hasMessageContaining("ff ff ff ff ff");
  }

  @Test
  void refusesALengthZeroFrame() {
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    assertThatThrownBy(() -> ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {0, 0, 0, 0})))
        .isInstanceOf(CorruptedFrameException.class)
        .hasMessageContaining("envelope has no body");
  }

  @Test
  void refusesAnEnvelopeWithOnlyUnknownFields() {
    // Field 99, varint 1: a valid protobuf message that sets no body this version knows.
    EmbeddedChannel ch = channel(FrameCodec.DEFAULT_MAX_FRAME_BYTES);
    assertThatThrownBy(
            () -> ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {0, 0, 0, 3, (byte) 0x98, 0x06, 0x01})))
        .isInstanceOf(CorruptedFrameException.class)
        .hasMessageContaining("envelope has no body");
  }

  @Property(tries = 500)
  void randomGarbageYieldsOnlyDecoderErrorsOrEnvelopesWithABody(
      @ForAll @Size(min = 1, max = 300) byte[] garbage) {
    EmbeddedChannel ch = channel(1024);
    try {
      ch.writeInbound(Unpooled.wrappedBuffer(garbage));
    } catch (DecoderException expected) {
      // refused loudly: fine
    }
    for (Envelope e : readAll(ch)) {
      assertThat(e.getBodyCase()).isNotEqualTo(Envelope.BodyCase.BODY_NOT_SET);
    }
  }

  @Test
  void refusesToSendAnEnvelopeAboveTheLimit() {
    EmbeddedChannel ch = channel(16);
    Envelope big = Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("x".repeat(100))).build();
    assertThatThrownBy(() -> ch.writeOutbound(big))
        .isInstanceOf(EncoderException.class)
        .hasMessageContaining("frame limit is 16 bytes");
  }

  @Test
  void refusesANonPositiveLimit() {
    assertThatThrownBy(() -> FrameCodec.install(new EmbeddedChannel().pipeline(), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("got 0");
  }
}
