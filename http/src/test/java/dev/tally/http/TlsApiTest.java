package dev.tally.http;

import dev.tally.coordinator.security.TestCertificates;
import dev.tally.coordinator.security.TlsIdentity;
import dev.tally.coordinator.security.TlsTrust;
import java.util.List;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TLS on the HTTP port from PEM files: a handshake with a certificate made in the test. */
class TlsApiTest {
  @TempDir Path dir;

  @Test
  void servesTheApiOverTlsToAClientThatTrustsItsCertificate() throws Exception {
    TestCertificates.Authority ca = TestCertificates.authority("Tally test CA");
    TestCertificates.Issued server = ca.issue("localhost", List.of("localhost"), List.of("127.0.0.1"));
    TlsIdentity identity = TlsIdentity.load(server.writeChain(dir.resolve("cert.pem")), server.writeKey(dir.resolve("key.pem")));
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().tls(identity), "tls-token")) {
      assertThat(t.api.url()).startsWith("https://127.0.0.1:");
      HttpClient trusting = HttpClient.newBuilder().sslContext(TlsTrust.load(ca.writeCertificate(dir.resolve("ca.pem"))).sslContext()).connectTimeout(Duration.ofSeconds(10)).build();
      HttpResponse<String> r = trusting.send(HttpRequest.newBuilder(URI.create(t.api.url() + ApiServer.BASE + "/runs"))
          .header("Authorization", "Bearer tls-token").build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.sslSession()).hasValueSatisfying(s -> assertThat(s.getProtocol()).startsWith("TLS"));

      // A client that does not trust the certificate does not get through the handshake.
      HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
      assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(URI.create(t.api.url() + ApiServer.BASE + "/runs")).build(),
          HttpResponse.BodyHandlers.ofString())).isInstanceOf(SSLHandshakeException.class);
    }
  }
}
