package dev.tally.coordinator.net.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.coordinator.net.fuzz.ReferenceModel.Item;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.codec.FrameCodec;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledHeapByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.slf4j.LoggerFactory;

/**
 * The frame decoder of the worker port, fuzzed in memory (Netty's EmbeddedChannel, no sockets), against
 * an independent reading of the wire format ({@link ReferenceModel#decode}) and with an allocator that
 * records the largest buffer the decoder ever holds.
 *
 * <p>Memory bound: the decoder may hold one frame (limit + 4-byte prefix) plus the rest of the read that
 * completed it; Netty drops consumed bytes from its cumulation buffer only once they fill half of it
 * ({@code discardSomeReadBytes}) and grows it to the next power of two. So no buffer may exceed
 * 4 x (limit + 4 + largest read); 2 x was observed to be exceeded (256 KiB for a 64 KiB limit and 8 KiB
 * reads). What matters is that the bound depends neither on the length a prefix claims nor on how many
 * bytes the stream carries.
 */
@AddLifecycleHook(FuzzBudget.class)
class FrameDecoderFuzzTest {
  private static final int MAX = WireFuzz.MAX_FRAME_BYTES;
  private static final int MAX_READ_BYTES = 8 * 1024;
  private static final int MAX_HELD_BYTES = 4 * (MAX + FrameCodec.LENGTH_PREFIX_BYTES + MAX_READ_BYTES);

  /** EmbeddedChannel logs every refusal after the first of one write, with its stack: noise here. */
  private static final String EMBEDDED_LOGGER = "io.netty.channel.embedded.EmbeddedChannel";
  private static ch.qos.logback.classic.Level savedLevel;

  @BeforeContainer
  static void quietEmbeddedChannel() {
    ch.qos.logback.classic.Logger logger = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(EMBEDDED_LOGGER);
    savedLevel = logger.getLevel();
    logger.setLevel(ch.qos.logback.classic.Level.ERROR);
  }

  @AfterContainer
  static void restoreEmbeddedChannel() {
    ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger(EMBEDDED_LOGGER)).setLevel(savedLevel);
  }

  @Property(tries = 1000)
  void anyByteStreamDecodesAsTheWireFormatSaysAndTheDecoderHoldsAtMostAboutOneFrame(
      @ForAll("streams") List<Step> steps,
      @ForAll @Size(min = 1, max = 8) List<@IntRange(min = 1, max = MAX_READ_BYTES) Integer> reads) {
    byte[] wire = ReferenceModel.wire(steps);
    List<Item> expected = ReferenceModel.decode(wire, MAX);
    TrackingAllocator alloc = new TrackingAllocator();
    EmbeddedChannel ch = channel(alloc);

    List<Envelope> decoded = new ArrayList<>();
    DecoderException refusal = null;
    int offset = 0;
    for (int i = 0; offset < wire.length && refusal == null; i++) {
      int n = Math.min(reads.get(i % reads.size()), wire.length - offset);
      try {
        ch.writeInbound(Unpooled.copiedBuffer(wire, offset, n));
      } catch (DecoderException e) {
        refusal = e; // the connection would close here: nothing more is read
      }
      offset += n;
      drain(ch, decoded);
    }

    List<Envelope> want = expected.stream().filter(Item.Decoded.class::isInstance)
        .map(d -> ((Item.Decoded) d).envelope()).toList();
    Item last = expected.isEmpty() ? null : expected.get(expected.size() - 1);
    if (last instanceof Item.Refused r && !r.tooLong()) {
      // A well-delimited frame that is not an Envelope fails in the Envelope decoder, downstream of the
      // frame decoder, which goes on splitting the rest of that read: frames after the bad one may still
      // come up. The connection's owner must ignore them (ConnectionCore does: it is CLOSED by then).
      assertThat(decoded).as("frames decoded").hasSizeGreaterThanOrEqualTo(want.size());
      assertThat(decoded.subList(0, want.size())).as("frames decoded before the refusal").isEqualTo(want);
    } else {
      assertThat(decoded).as("frames decoded").containsExactlyElementsOf(want);
    }
    if (last instanceof Item.Refused r) {
      assertThat(refusal).as("refusal of: %s", r.why()).isNotNull();
      assertThat(refusal).isInstanceOf(r.tooLong() ? TooLongFrameException.class : CorruptedFrameException.class);
      if (r.tooLong()) {
        assertThat(refusal).hasMessageContaining("frame length " + r.length());
      }
    } else {
      assertThat(refusal).as("no refusal expected").isNull();
    }
    assertThat(alloc.largest.get()).as("largest buffer the decoder held").isLessThanOrEqualTo(MAX_HELD_BYTES);
    ch.finishAndReleaseAll();
  }

  @Property(tries = 300)
  void anOversizedLengthPrefixIsRefusedOnItsFourBytesAloneWithoutABufferOfThatSize(
      @ForAll @LongRange(min = MAX + 1L, max = 0xFFFF_FFFFL) long length,
      @ForAll @IntRange(min = 1, max = 4) int bytesPerRead) {
    byte[] prefix = ByteBuffer.allocate(4).putInt((int) length).array();
    TrackingAllocator alloc = new TrackingAllocator();
    EmbeddedChannel ch = channel(alloc);
    DecoderException refusal = null;
    int fed = 0;
    while (fed < prefix.length && refusal == null) {
      int n = Math.min(bytesPerRead, prefix.length - fed);
      try {
        ch.writeInbound(Unpooled.copiedBuffer(prefix, fed, n));
      } catch (DecoderException e) {
        refusal = e;
      }
      fed += n;
    }
    assertThat(fed).as("refused only once all 4 length bytes arrived").isEqualTo(4);
    assertThat(refusal).isInstanceOf(TooLongFrameException.class)
        .hasMessageContaining("frame length " + length)
        .hasMessageContaining("exceeds the limit of " + MAX + " bytes");
    assertThat(alloc.largest.get()).isLessThan(1024);
    ch.finishAndReleaseAll();
  }

  @Property(tries = 20)
  void aLongStreamOfFramesUpToTheLimitNeverGrowsTheDecodersBuffer(
      @ForAll @Size(min = 20, max = 120) List<@IntRange(min = 0, max = MAX - 8) Integer> reasonLengths,
      @ForAll @IntRange(min = 1, max = MAX_READ_BYTES) int readBytes) {
    ByteArrayOutputStream stream = new ByteArrayOutputStream();
    List<Envelope> sent = new ArrayList<>();
    for (int n : reasonLengths) {
      Envelope e = Envelope.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("r".repeat(n))).build();
      sent.add(e);
      stream.writeBytes(Step.frame(e.toByteArray()));
    }
    byte[] wire = stream.toByteArray();
    TrackingAllocator alloc = new TrackingAllocator();
    EmbeddedChannel ch = channel(alloc);
    List<Envelope> decoded = new ArrayList<>();
    for (int offset = 0; offset < wire.length; offset += readBytes) {
      ch.writeInbound(Unpooled.copiedBuffer(wire, offset, Math.min(readBytes, wire.length - offset)));
      drain(ch, decoded);
    }
    assertThat(decoded).hasSize(sent.size()).isEqualTo(sent);
    assertThat(alloc.largest.get()).as("largest buffer over a %d-byte stream", wire.length)
        .isLessThanOrEqualTo(MAX_HELD_BYTES);
    ch.finishAndReleaseAll();
  }

  @Provide
  Arbitrary<List<Step>> streams() {
    return Arbitraries.oneOf(WireFuzz.session(12, 3), WireFuzz.raw().list().ofMinSize(1).ofMaxSize(6));
  }

  private static EmbeddedChannel channel(ByteBufAllocator alloc) {
    EmbeddedChannel ch = new EmbeddedChannel();
    ch.config().setAllocator(alloc);
    FrameCodec.install(ch.pipeline(), MAX);
    return ch;
  }

  private static void drain(EmbeddedChannel ch, List<Envelope> into) {
    for (Object o; (o = ch.readInbound()) != null; ) {
      into.add((Envelope) o);
    }
  }

  /**
   * Hands out unpooled heap buffers that record their largest capacity, at allocation and every time they
   * grow (a cumulation buffer grows in place through {@code capacity(int)}, not through the allocator).
   */
  static final class TrackingAllocator extends AbstractByteBufAllocator {
    final AtomicInteger largest = new AtomicInteger();

    TrackingAllocator() {
      super(false);
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
      largest.accumulateAndGet(initialCapacity, Math::max);
      return new UnpooledHeapByteBuf(this, initialCapacity, maxCapacity) {
        @Override
        public ByteBuf capacity(int newCapacity) {
          largest.accumulateAndGet(newCapacity, Math::max);
          return super.capacity(newCapacity);
        }
      };
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
      return newHeapBuffer(initialCapacity, maxCapacity);
    }

    @Override
    public boolean isDirectBufferPooled() {
      return false;
    }
  }
}
