package dev.tally.coordinator.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsIdentityTest {
  @TempDir Path dir;

  private final TestCertificates.Authority ca = TestCertificates.authority("Tally Test CA");

  @Test
  void loadsAChainAndItsKeyAndPrintsNoKeyMaterial() throws Exception {
    TestCertificates.Issued server = ca.issue("coordinator", List.of("localhost"), List.of("127.0.0.1"));
    Path cert = server.writeChain(dir.resolve("cert.pem"));
    Path key = server.writeKey(dir.resolve("key.pem"));
    TlsIdentity identity = TlsIdentity.load(cert, key);
    assertThat(identity.chain()).hasSize(2);
    assertThat(identity.chain().get(0)).isEqualTo(server.certificate());
    String keyText = Files.readString(key);
    String keyBase64 = keyText.lines().filter(l -> !l.startsWith("-----")).findFirst().orElseThrow();
    assertThat(identity.toString()).contains("CN=coordinator", cert.toString(), key.toString()).doesNotContain(keyBase64);
    assertThat(identity.nettyServerContext().isServer()).isTrue();
    assertThat(identity.keyStore(new char[0]).isKeyEntry(TlsIdentity.KEY_ALIAS)).isTrue();
  }

  @Test
  void readsAnRsaKeyInThePkcs1FormOfOlderOpenssl() throws Exception {
    Instant now = Instant.now();
    TestCertificates.Issued server = ca.issue("rsa", List.of("localhost"), List.of(), true, now.minusSeconds(60),
        now.plus(Duration.ofDays(1)));
    Path key = server.writeTraditionalKey(dir.resolve("key.pem"));
    assertThat(Files.readString(key)).startsWith("-----BEGIN RSA PRIVATE KEY-----");
    TlsIdentity identity = TlsIdentity.load(server.writeChain(dir.resolve("cert.pem")), key);
    assertThat(identity.chain().get(0).getPublicKey().getAlgorithm()).isEqualTo("RSA");
  }

  @Test
  void oneFileMayHoldBothTheCertificateAndTheKey() throws Exception {
    TestCertificates.Issued server = ca.issue("combined", List.of("localhost"), List.of());
    Path cert = server.writeChain(dir.resolve("cert.pem"));
    Path key = server.writeKey(dir.resolve("key.pem"));
    Path both = Files.writeString(dir.resolve("both.pem"), Files.readString(key) + Files.readString(cert));
    assertThat(TlsIdentity.load(both, both).chain()).hasSize(2);
  }

  @Test
  void aKeyOfAnotherCertificateIsRefusedNamingBothFiles() throws Exception {
    Path cert = ca.issue("one", List.of("localhost"), List.of()).writeChain(dir.resolve("cert.pem"));
    Path otherKey = ca.issue("two", List.of("localhost"), List.of()).writeKey(dir.resolve("other-key.pem"));
    assertThatThrownBy(() -> TlsIdentity.load(cert, otherKey)).isInstanceOf(TlsFileException.class)
        .hasMessageContaining("the key in " + otherKey + " is not the key of the certificate in " + cert)
        .extracting(e -> ((TlsFileException) e).file()).isEqualTo(otherKey);
    Instant now = Instant.now();
    Path rsaCert = ca.issue("rsa", List.of(), List.of(), true, now.minusSeconds(60), now.plusSeconds(3600))
        .writeChain(dir.resolve("rsa-cert.pem"));
    Path rsaKey = ca.issue("rsa2", List.of(), List.of(), true, now.minusSeconds(60), now.plusSeconds(3600))
        .writeKey(dir.resolve("rsa-key.pem"));
    assertThatThrownBy(() -> TlsIdentity.load(rsaCert, rsaKey)).hasMessageContaining("is not the key of the certificate");
    assertThatThrownBy(() -> TlsIdentity.load(rsaCert, otherKey)).hasMessageContaining("is not the key of the certificate");
  }

  @Test
  void aCertificateOutsideItsValidityIsRefusedWithItsDates() throws Exception {
    Instant now = Instant.now();
    TestCertificates.Issued expired = ca.issue("old", List.of("localhost"), List.of(), false,
        now.minus(Duration.ofDays(10)), now.minus(Duration.ofDays(1)));
    Path cert = expired.writeChain(dir.resolve("cert.pem"));
    Path key = expired.writeKey(dir.resolve("key.pem"));
    assertThatThrownBy(() -> TlsIdentity.load(cert, key)).hasMessageContaining("the certificate in " + cert)
        .hasMessageContaining("expired on");
    TestCertificates.Issued early = ca.issue("new", List.of("localhost"), List.of(), false,
        now.plus(Duration.ofDays(1)), now.plus(Duration.ofDays(2)));
    Path earlyCert = early.writeChain(dir.resolve("early.pem"));
    assertThatThrownBy(() -> TlsIdentity.load(earlyCert, early.writeKey(dir.resolve("early-key.pem"))))
        .hasMessageContaining("is not valid before");
  }

  @Test
  void badFilesAreRefusedNamingThemAndSayingWhatToDo() throws Exception {
    TestCertificates.Issued server = ca.issue("coordinator", List.of("localhost"), List.of());
    Path cert = server.writeChain(dir.resolve("cert.pem"));
    Path key = server.writeKey(dir.resolve("key.pem"));
    Path missing = dir.resolve("missing.pem");
    assertThatThrownBy(() -> TlsIdentity.load(missing, key)).hasMessage("certificate file " + missing + " does not exist");
    assertThatThrownBy(() -> TlsIdentity.load(cert, missing)).hasMessage("key file " + missing + " does not exist");
    assertThatThrownBy(() -> TlsIdentity.load(key, cert)).hasMessageContaining("holds no certificate")
        .hasMessageContaining("were the certificate and key files swapped?");
    Path notPem = Files.writeString(dir.resolve("not.pem"), "hello\n");
    assertThatThrownBy(() -> TlsIdentity.load(cert, notPem)).hasMessageContaining("key file " + notPem + " holds no private key");
    Path sec1 = server.writeTraditionalKey(dir.resolve("ec.pem"));
    assertThatThrownBy(() -> TlsIdentity.load(cert, sec1)).hasMessageContaining("SEC1")
        .hasMessageContaining("openssl pkcs8 -topk8 -nocrypt -in " + sec1);
    Path encrypted = Files.writeString(dir.resolve("enc.pem"), "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
        + Base64.getEncoder().encodeToString(new byte[48]) + "\n-----END ENCRYPTED PRIVATE KEY-----\n");
    assertThatThrownBy(() -> TlsIdentity.load(cert, encrypted)).hasMessageContaining("is encrypted");
    Path brokenCert = Files.writeString(dir.resolve("broken.pem"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assertThatThrownBy(() -> TlsIdentity.load(brokenCert, key)).hasMessageContaining("certificate 1 does not parse");
    assertThatThrownBy(() -> TlsTrust.load(missing)).hasMessage("CA file " + missing + " does not exist");
  }

  /** The JDK contexts H-C's HTTP listener and a JDK HttpClient use: a handshake, with hostname verification. */
  @Test
  void theJdkContextsShakeHandsAndVerifyTheHostName() throws Exception {
    TestCertificates.Issued server = ca.issue("coordinator", List.of("localhost"), List.of("127.0.0.1"));
    TlsIdentity identity = TlsIdentity.load(server.writeChain(dir.resolve("cert.pem")), server.writeKey(dir.resolve("key.pem")));
    TlsTrust trust = TlsTrust.load(ca.writeCertificate(dir.resolve("ca.pem")));
    assertThat(handshake(identity, trust, "localhost")).isEqualTo("hello");

    TestCertificates.Issued elsewhere = ca.issue("elsewhere", List.of("other.example"), List.of());
    TlsIdentity wrongName = TlsIdentity.load(elsewhere.writeChain(dir.resolve("c2.pem")), elsewhere.writeKey(dir.resolve("k2.pem")));
    assertThatThrownBy(() -> handshake(wrongName, trust, "localhost")).isInstanceOf(SSLHandshakeException.class);

    TlsTrust otherCa = TlsTrust.load(TestCertificates.authority("Other CA").writeCertificate(dir.resolve("other-ca.pem")));
    assertThatThrownBy(() -> handshake(identity, otherCa, "localhost")).isInstanceOf(SSLHandshakeException.class);
  }

  private static String handshake(TlsIdentity identity, TlsTrust trust, String host) throws Exception {
    try (SSLServerSocket listener = (SSLServerSocket) identity.sslContext().getServerSocketFactory()
        .createServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Void> served = CompletableFuture.runAsync(() -> {
        try (var accepted = listener.accept(); OutputStream out = accepted.getOutputStream()) {
          out.write("hello".getBytes());
        } catch (IOException e) {
          // the client refused the handshake: its side is what the test looks at
        }
      });
      try (SSLSocket socket = (SSLSocket) trust.sslContext().getSocketFactory().createSocket(host, listener.getLocalPort())) {
        SSLParameters parameters = socket.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm(TlsTrust.HOSTNAME_VERIFICATION);
        socket.setSSLParameters(parameters);
        socket.startHandshake();
        InputStream in = socket.getInputStream();
        return new String(in.readAllBytes());
      } finally {
        served.get(10, TimeUnit.SECONDS);
      }
    }
  }
}
