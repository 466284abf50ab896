package dev.tally.coordinator.net.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.coordinator.net.WorkerServer;
import dev.tally.protocol.Envelope;
import dev.tally.protocol.Hello;
import org.junit.jupiter.api.Test;

/**
 * Regression for a fuzz finding: a frame limit the settings accept (here 40 bytes) is smaller than the
 * Goodbye the server sends when it refuses a connection. The Goodbye's encoder failure comes back
 * synchronously into WorkerConnection.exceptionCaught as an EncoderException (the core's CANNOT_SEND), which refuses again with a
 * new Goodbye, which fails again: unbounded recursion, a StackOverflowError that kills the I/O thread
 * (every connection on that event loop is then dead, none is reported lost) and leaves logback's
 * ThrowableProxy class unusable for the rest of the JVM.
 *
 * <p>Fixed by marking the connection closed before its Goodbye is written.
 */
class SmallFrameLimitTest {

  @Test
  void aFrameLimitBelowTheGoodbyesSizeStillClosesARefusedConnection() throws Exception {
    EventLog events = new EventLog();
    try (WorkerServer server = WorkerServer.start("127.0.0.1", 0,
            WorkerServer.Settings.builder().maxFrameBytes(40).build(), events);
        FuzzPeer oversized = new FuzzPeer(server.port());
        FuzzPeer hello = new FuzzPeer(server.port())) {
      oversized.send(new byte[] {0, 0, 0, 100}); // refused: "malformed frame: frame length 100 ..." (> 40 bytes)
      assertThat(oversized.awaitEnded(WorkerPortHarness.PATIENCE)).as("the refused connection is closed").isTrue();

      // The 43-byte Welcome cannot be sent either: refused, and closed without a join.
      hello.send(Envelope.newBuilder().setHello(Hello.newBuilder().setWorkerId("w").setName("n").setSlots(1)).build());
      assertThat(hello.awaitEnded(WorkerPortHarness.PATIENCE)).as("the session that cannot be welcomed is closed")
          .isTrue();
      events.checkWellFormed();
    }
  }
}
