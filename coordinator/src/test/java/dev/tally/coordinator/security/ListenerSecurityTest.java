package dev.tally.coordinator.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.coordinator.security.ListenerSecurity.Decision;
import dev.tally.coordinator.security.ListenerSecurity.Listener;
import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

class ListenerSecurityTest {
  private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 7070);
  private static final InetSocketAddress WILDCARD = new InetSocketAddress("0.0.0.0", 7070);

  @Test
  void aLoopbackListenerStartsWithoutATokenOrAWord() {
    for (String host : new String[] {"127.0.0.1", "127.0.0.2", "::1", "localhost"}) {
      Decision d = ListenerSecurity.judge(Listener.WORKER_PORT, new InetSocketAddress(host, 1), false, false, false);
      assertThat(d.allowed()).as(host).isTrue();
      assertThat(d.message()).as(host).isNull();
    }
  }

  @Test
  void aNonLoopbackListenerWithoutATokenIsRefusedSayingWhatToDo() {
    Decision d = ListenerSecurity.judge(Listener.WORKER_PORT, WILDCARD, false, true, false);
    assertThat(d.allowed()).isFalse();
    assertThat(d.message()).contains("the worker port on 0.0.0.0:7070", "not a loopback address", "would have no token",
        "--worker-token-file FILE (or TALLY_WORKER_TOKEN)", "listen on 127.0.0.1", "--insecure");
    Decision api = ListenerSecurity.judge(Listener.HTTP_API, WILDCARD, false, true, false);
    assertThat(api.message()).contains("the HTTP API", "--api-token-file FILE (or TALLY_API_TOKEN)", "remote code execution");
    assertThatThrownBy(() -> ListenerSecurity.enforce(Listener.HTTP_API, WILDCARD, false, true, false))
        .isInstanceOf(ListenerSecurity.InsecureListenerException.class).hasMessage(api.message());
  }

  @Test
  void anUnresolvedNameIsNotLoopback() {
    InetSocketAddress unresolved = InetSocketAddress.createUnresolved("localhost", 7070);
    assertThat(ListenerSecurity.judge(Listener.WORKER_PORT, unresolved, false, false, false).allowed()).isFalse();
  }

  @Test
  void insecureStartsWithAWarningThatSaysWhatIsExposed() {
    Decision d = ListenerSecurity.judge(Listener.WORKER_PORT, WILDCARD, false, false, true);
    assertThat(d.allowed()).isTrue();
    assertThat(d.warns()).isTrue();
    assertThat(d.message()).startsWith("--insecure: the worker port on 0.0.0.0:7070")
        .contains(Listener.WORKER_PORT.exposure(), "clear text");
  }

  @Test
  void aTokenWithoutTlsStartsWithAWarningAboutClearText() {
    Decision d = ListenerSecurity.judge(Listener.WORKER_PORT, WILDCARD, true, false, false);
    assertThat(d.warns()).isTrue();
    assertThat(d.message()).contains("no TLS", "clear text", "--tls-cert and --tls-key");
    Decision full = ListenerSecurity.judge(Listener.WORKER_PORT, WILDCARD, true, true, false);
    assertThat(full.allowed()).isTrue();
    assertThat(full.message()).isNull();
  }

  /** The clients' one rule: an address, or a name all of whose addresses are loopback; text is not enough. */
  @Test
  void aClientsHostIsLoopbackOnlyIfItsAddressesAre() {
    assertThat(ListenerSecurity.isLoopbackHost("127.0.0.1")).isTrue();
    assertThat(ListenerSecurity.isLoopbackHost("127.3.4.5")).isTrue();
    assertThat(ListenerSecurity.isLoopbackHost("::1")).isTrue();
    assertThat(ListenerSecurity.isLoopbackHost("[::1]")).isTrue();
    assertThat(ListenerSecurity.isLoopbackHost("::ffff:127.0.0.1")).as("IPv4-mapped loopback").isTrue();
    assertThat(ListenerSecurity.isLoopbackHost("localhost")).isTrue();
    assertThat(ListenerSecurity.isLoopbackHost("192.0.2.1")).as("TEST-NET-1").isFalse();
    // A name that starts like a loopback address is a name: passed for loopback when the check compared text.
    assertThat(ListenerSecurity.isLoopbackHost("127.evil.invalid")).isFalse();
    assertThat(ListenerSecurity.isLoopbackHost("localhost.invalid")).isFalse();
  }
}
