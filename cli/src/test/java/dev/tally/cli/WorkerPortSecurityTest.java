package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.coordinator.security.TestCertificates;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.coordinator.security.TlsTrust;
import dev.tally.core.security.Secret;
import dev.tally.core.store.memory.InMemoryStore;
import dev.tally.worker.Termination;
import dev.tally.worker.WorkerSession;
import dev.tally.worker.WorkerSettings;
import io.netty.handler.ssl.SslContext;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker port's token and TLS over real sockets, with a real coordinator and real worker sessions in
 * this JVM: who joins, who is refused and stops, who keeps failing its handshake and says why.
 */
class WorkerPortSecurityTest {
  private static final String TOKEN = "worker-token-4f1c2a9e7b3d";
  private static final Duration PATIENCE = Duration.ofSeconds(30);

  @TempDir Path dir;

  private TestCertificates.Authority ca;
  private TlsIdentity identity;
  private SslContext trustsCa;
  private final List<AutoCloseable> open = new ArrayList<>();

  @BeforeEach
  void certificates() throws Exception {
    ca = TestCertificates.authority("Tally Test CA");
    TestCertificates.Issued server = ca.issue("coordinator", List.of("localhost"), List.of("127.0.0.1"));
    identity = TlsIdentity.load(server.writeChain(dir.resolve("cert.pem")), server.writeKey(dir.resolve("key.pem")));
    trustsCa = TlsTrust.load(ca.writeCertificate(dir.resolve("ca.pem"))).nettyClientContext();
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private Coordinator coordinator(CoordinatorBuilder builder) throws Exception {
    Coordinator c = builder.store(InMemoryStore.create(Clock.systemUTC()))
        .listen(new InetSocketAddress("127.0.0.1", 0)).start();
    open.add(c);
    return c;
  }

  private WorkerSession worker(String host, Coordinator c, Secret token, SslContext tls) {
    WorkerSession session = new WorkerSession(WorkerSettings.builder(host, c.port()).slots(1).token(token).tls(tls)
        .maxBackoff(Duration.ofMillis(200)).giveUpAfter(Duration.ofSeconds(3)).build());
    open.add(session);
    session.start();
    return session;
  }

  @Test
  void aWorkerWithTheTokenJoinsOverTls() throws Exception {
    Coordinator c = coordinator(Coordinator.builder().workerToken(Secret.of(TOKEN, "t")).tls(identity));
    WorkerSession w = worker("localhost", c, Secret.of(TOKEN, "t"), trustsCa);
    await().atMost(PATIENCE).until(w::connected);
    await().atMost(PATIENCE).until(() -> c.connectedWorkers() == 1);
  }

  @Test
  void aWorkerWithAWrongOrNoTokenIsRefusedAndStopsWithTheReason() throws Exception {
    Coordinator c = coordinator(Coordinator.builder().workerToken(Secret.of(TOKEN, "t")).tls(identity));
    WorkerSession wrong = worker("localhost", c, Secret.of("another-token", "t"), trustsCa);
    WorkerSession none = worker("127.0.0.1", c, null, trustsCa);
    for (WorkerSession w : List.of(wrong, none)) {
      assertThat(w.awaitTermination(PATIENCE)).isTrue();
      assertThat(w.termination().kind()).isEqualTo(Termination.Kind.REFUSED);
      assertThat(w.termination().kind().exitCode()).isEqualTo(3);
      assertThat(w.termination().detail()).contains("refused this worker").doesNotContain(TOKEN)
          .doesNotContain("another-token");
    }
    assertThat(wrong.termination().detail()).contains("wrong worker token");
    assertThat(none.termination().detail()).contains("requires a worker token");
    assertThat(c.connectedWorkers()).isZero();
  }

  @Test
  void aCoordinatorWithoutATokenTakesAWorkerThatHasOne() throws Exception {
    Coordinator c = coordinator(Coordinator.builder());
    WorkerSession w = worker("127.0.0.1", c, Secret.of(TOKEN, "t"), null);
    await().atMost(PATIENCE).until(w::connected);
  }

  @Test
  void aWorkerOnThisMachineMaySpeakPlaintextToATlsPortButStillNeedsTheToken() throws Exception {
    Coordinator c = coordinator(Coordinator.builder().workerToken(Secret.of(TOKEN, "t")).tls(identity));
    WorkerSession local = worker("127.0.0.1", c, Secret.of(TOKEN, "t"), null);
    await().atMost(PATIENCE).until(local::connected);
    WorkerSession noToken = worker("127.0.0.1", c, null, null);
    assertThat(noToken.awaitTermination(PATIENCE)).isTrue();
    assertThat(noToken.termination().kind()).isEqualTo(Termination.Kind.REFUSED);
  }

  @Test
  void aCertificateFromAnotherCaOrForAnotherNameFailsTheHandshakeAndSaysWhy() throws Exception {
    Coordinator c = coordinator(Coordinator.builder().workerToken(Secret.of(TOKEN, "t")).tls(identity));
    SslContext otherCa = TlsTrust.load(TestCertificates.authority("Other CA").writeCertificate(dir.resolve("other.pem")))
        .nettyClientContext();
    WorkerSession untrusted = worker("localhost", c, Secret.of(TOKEN, "t"), otherCa);
    assertThat(untrusted.awaitTermination(PATIENCE)).isTrue();
    assertThat(untrusted.termination().kind()).as("not refused: a handshake may succeed later").isEqualTo(Termination.Kind.GAVE_UP);
    assertThat(untrusted.termination().detail()).contains("TLS handshake with the coordinator failed");

    TestCertificates.Issued elsewhere = ca.issue("elsewhere", List.of("other.example"), List.of());
    Coordinator misnamed = coordinator(Coordinator.builder().workerToken(Secret.of(TOKEN, "t")).tls(
        TlsIdentity.load(elsewhere.writeChain(dir.resolve("e.pem")), elsewhere.writeKey(dir.resolve("ek.pem")))));
    WorkerSession wrongName = worker("localhost", misnamed, Secret.of(TOKEN, "t"), trustsCa);
    assertThat(wrongName.awaitTermination(PATIENCE)).isTrue();
    assertThat(wrongName.termination().detail()).contains("TLS handshake with the coordinator failed", "name localhost");
    assertThat(c.connectedWorkers() + misnamed.connectedWorkers()).isZero();
  }

  @Test
  void aTlsWorkerAtAPlaintextPortSaysTheCoordinatorDoesNotSpeakTls() throws Exception {
    Coordinator c = coordinator(Coordinator.builder());
    WorkerSession w = worker("localhost", c, null, trustsCa);
    assertThat(w.awaitTermination(PATIENCE)).isTrue();
    assertThat(w.termination().detail()).contains("did not answer in TLS");
  }

  @Test
  void theOpenPortRuleRefusesAnOpenNonLoopbackPortAndInsecureLetsItStart() throws Exception {
    CoordinatorBuilder open = Coordinator.builder().store(InMemoryStore.create(Clock.systemUTC()))
        .listen(new InetSocketAddress("0.0.0.0", 0));
    assertThatThrownBy(open::start).isInstanceOf(CoordinatorBuilder.StartException.class)
        .hasMessageContaining("would have no token")
        .extracting(e -> ((CoordinatorBuilder.StartException) e).reason())
        .isEqualTo(CoordinatorBuilder.StartException.Reason.INSECURE_LISTENER);
    Coordinator insecure = open.insecure(true).start();
    this.open.add(insecure);
    assertThat(insecure.port()).isPositive();
    Coordinator withToken = Coordinator.builder().store(InMemoryStore.create(Clock.systemUTC()))
        .listen(new InetSocketAddress("0.0.0.0", 0)).workerToken(Secret.of(TOKEN, "t")).tls(identity).start();
    this.open.add(withToken);
    assertThat(withToken.tls()).contains(identity);
  }
}
