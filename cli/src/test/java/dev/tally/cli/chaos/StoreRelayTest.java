package dev.tally.cli.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The relay chaos takes the database's network away with: bytes pass, a cut ends and refuses, a stall holds. */
class StoreRelayTest {
  private ServerSocket echo;
  private StoreRelay relay;

  @BeforeEach
  void start() throws IOException {
    echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(() -> {
      while (!echo.isClosed()) {
        try {
          Socket s = echo.accept();
          Thread e = new Thread(() -> {
            try (s; InputStream in = s.getInputStream()) {
              in.transferTo(s.getOutputStream());
            } catch (IOException ignored) {
              // the peer went away
            }
          });
          e.setDaemon(true);
          e.start();
        } catch (IOException closed) {
          return;
        }
      }
    });
    t.setDaemon(true);
    t.start();
    relay = StoreRelay.start("127.0.0.1", echo.getLocalPort());
  }

  @AfterEach
  void stop() throws IOException {
    relay.close();
    echo.close();
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), relay.port());
    s.setSoTimeout(5_000);
    return s;
  }

  private static int roundTrip(Socket s, int b) throws IOException {
    s.getOutputStream().write(b);
    s.getOutputStream().flush();
    return s.getInputStream().read();
  }

  @Test
  void bytesPassBothWaysUntilACutEndsEveryConnectionAndRefusesNewOnesForItsTime() throws Exception {
    assertThat(relay.faultDone()).isFalse();
    assertThat(relay.faulted(System.nanoTime())).as("no fault at the start").isFalse();
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 42)).isEqualTo(42);
      relay.cut(Duration.ofSeconds(2));
      assertThat(relay.faulted(System.nanoTime())).isTrue();
      assertThat(s.getInputStream().read()).as("the relayed connection ends").isEqualTo(-1);
    }
    try (Socket refused = connect()) {
      assertThat(refused.getInputStream().read()).as("a new connection during the cut is closed at once").isEqualTo(-1);
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> !relay.faulted(System.nanoTime()));
    try (Socket again = connect()) {
      assertThat(roundTrip(again, 7)).as("after the cut").isEqualTo(7);
    }
    assertThat(relay.faultDone()).isTrue();
  }

  @Test
  void aStallHoldsWhatIsSentUntilItIsOverThenPassesItOn() throws Exception {
    try (Socket s = connect()) {
      assertThat(roundTrip(s, 1)).isEqualTo(1);
      relay.stall(Duration.ofSeconds(2));
      s.getOutputStream().write(2);
      s.getOutputStream().flush();
      s.setSoTimeout(500);
      assertThatThrownBy(() -> s.getInputStream().read()).as("silence during the stall").isInstanceOf(SocketTimeoutException.class);
      s.setSoTimeout(10_000);
      assertThat(s.getInputStream().read()).as("the byte, once the stall is over").isEqualTo(2);
      assertThat(relay.faulted(System.nanoTime())).isFalse();
    }
  }
}
