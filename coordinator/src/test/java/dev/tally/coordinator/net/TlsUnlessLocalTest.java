package dev.tally.coordinator.net;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.coordinator.security.TestCertificates;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Goodbye;
import dev.tally.protocol.Hello;
import dev.tally.protocol.codec.FrameCodec;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsUnlessLocalTest {
  @TempDir Path dir;

  @Test
  void aPlaintextPeerFromElsewhereGetsAPlaintextGoodbyeSayingTlsIsRequiredAndIsClosed() throws Exception {
    TestCertificates.Issued server = TestCertificates.authority("CA").issue("c", List.of("localhost"), List.of());
    TlsIdentity identity = TlsIdentity.load(server.writeChain(dir.resolve("c.pem")), server.writeKey(dir.resolve("k.pem")));
    // An embedded channel's peer is no socket address of this machine: "elsewhere".
    EmbeddedChannel ch = new EmbeddedChannel();
    ch.pipeline().addLast(new TlsUnlessLocal(identity.nettyServerContext(), new RefusalLog(), System::nanoTime));
    FrameCodec.install(ch.pipeline(), 1 << 20);

    byte[] hello = Envelope.newBuilder().setHello(Hello.newBuilder().setWorkerId("w").setSlots(1)
        .setCredentials("a-token")).build().toByteArray();
    ch.writeInbound(Unpooled.buffer().writeInt(hello.length).writeBytes(hello));

    assertThat((Object) ch.readInbound()).as("nothing it said reached the connection").isNull();
    ByteBuf out = Unpooled.buffer();
    for (Object part; (part = ch.readOutbound()) != null; ) {
      out.writeBytes((ByteBuf) part);
      ((ByteBuf) part).release();
    }
    int length = out.readInt();
    Envelope answer = Envelope.parseFrom(out.readBytes(length).nioBuffer());
    assertThat(answer.getGoodbye().getCode()).isEqualTo(Goodbye.Code.TLS_REQUIRED);
    assertThat(answer.getGoodbye().getReason()).contains("speaks TLS", "--tls-ca");
    assertThat(ch.isOpen()).isFalse();
    out.release();
  }

  @Test
  void loopbackPeersAreOnThisMachineAndOthersAreNot() {
    assertThat(TlsUnlessLocal.onThisMachine(new InetSocketAddress("127.0.0.1", 1))).isTrue();
    assertThat(TlsUnlessLocal.onThisMachine(new InetSocketAddress("::1", 1))).isTrue();
    assertThat(TlsUnlessLocal.onThisMachine(new InetSocketAddress("192.0.2.1", 1))).as("TEST-NET-1").isFalse();
    assertThat(TlsUnlessLocal.onThisMachine(InetSocketAddress.createUnresolved("localhost", 1))).isFalse();
  }
}
