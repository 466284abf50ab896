package dev.tally.http;

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
    TestCertificates certs = TestCertificates.write(dir);
    try (TestApi t = TestApi.start(dir, ApiServer.Settings.builder().tls(certs.certificate(), certs.privateKey()), "tls-token")) {
      assertThat(t.api.url()).startsWith("https://127.0.0.1:");
      HttpClient trusting = HttpClient.newBuilder().sslContext(certs.clientContext()).connectTimeout(Duration.ofSeconds(10)).build();
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

  @Test
  void aCertificateFileThatCannotBeReadIsRefusedAtStartNamingIt() {
    Path missing = dir.resolve("nope.pem");
    assertThatThrownBy(() -> TestApi.start(dir, ApiServer.Settings.builder().tls(missing, missing), null))
        .isInstanceOf(ApiServer.StartException.class).hasMessageContaining("nope.pem");
  }
}
