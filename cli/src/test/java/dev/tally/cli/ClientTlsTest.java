package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.security.TestCertificates;
import dev.tally.http.ApiServer;
import dev.tally.http.TallyServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client commands over TLS: with {@code --tls-ca} they trust the server's certificate and get through;
 * without it (a CA the JVM does not know) the handshake fails once, finally, with what to do, rather than
 * being retried; {@code --tls-ca} with a plain {@code http://} server is a usage error.
 */
class ClientTlsTest {
  @TempDir Path dir;

  private record Invocation(int exit, String out, String err) {}

  private static Invocation tally(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = Main.commandLine().setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true)).execute(args);
    return new Invocation(exit, out.toString(), err.toString());
  }

  @Test
  void aClientTrustingTheServersCaGetsThroughAndOneThatDoesNotIsToldWhy() throws Exception {
    TestCertificates.Authority ca = TestCertificates.authority("tally test CA");
    TestCertificates.Issued cert = ca.issue("tally server", List.of("localhost"), List.of("127.0.0.1"));
    Path chain = cert.writeChain(dir.resolve("server.pem"));
    Path key = cert.writeKey(dir.resolve("server.key"));
    Path caFile = ca.writeCertificate(dir.resolve("ca.pem"));
    Path tokenFile = Files.writeString(dir.resolve("api-token"), "tls-client-token\n");
    ApiServer.Settings api = ApiServer.Settings.builder().bind("127.0.0.1", 0).token(dev.tally.core.security.Secret.of("tls-client-token", "API token")).tls(dev.tally.coordinator.security.TlsIdentity.load(chain, key))
        .spoolDirectory(dir.resolve("uploads")).build();
    try (TallyServer server = TallyServer.start(Coordinator.builder().storeFile(dir.resolve("tally.db")), api)) {
      String url = "https://127.0.0.1:" + server.api().port();
      Invocation trusted = tally("runs", "--server", url, "--tls-ca", caFile.toString(), "--token-file", tokenFile.toString());
      assertThat(trusted.exit()).as(trusted.err()).isZero();
      assertThat(trusted.err()).contains("no runs on " + url);

      Invocation untrusted = tally("runs", "--server", url, "--token-file", tokenFile.toString(), "--retries", "3");
      assertThat(untrusted.exit()).isEqualTo(Main.EXIT_FAILED);
      assertThat(untrusted.err()).contains("the TLS handshake failed").contains("--tls-ca").doesNotContain("retry 1");
    }
    Invocation plain = tally("runs", "--server", "http://127.0.0.1:1", "--tls-ca", caFile.toString());
    assertThat(plain.exit()).isEqualTo(Main.EXIT_USAGE);
    assertThat(plain.err()).contains("--tls-ca is for an https:// server");
  }
}
