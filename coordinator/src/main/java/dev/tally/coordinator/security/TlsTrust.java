package dev.tally.coordinator.security;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * What a client of a Tally listener trusts: the CA certificates of one PEM file ({@code tally worker
 * --tls-ca}; {@code tally submit --tls-ca}). A server is trusted if its chain leads to one of them (a
 * self-signed server certificate may be its own CA) <em>and</em> the name the client connected to (host
 * name or IP address) is in the server certificate's subject alternative names: hostname verification is
 * always on, as HTTPS does it (RFC 2818, RFC 6125).
 *
 * <p>Immutable and thread-safe; {@link #toString()} names the file and the certificates' subjects.
 */
public final class TlsTrust {
  /** The endpoint identification algorithm: HTTPS's host name rules, for every client Tally makes. */
  public static final String HOSTNAME_VERIFICATION = "HTTPS";

  private final Path caFile;
  private final List<X509Certificate> authorities;

  private TlsTrust(Path caFile, List<X509Certificate> authorities) {
    this.caFile = caFile;
    this.authorities = authorities;
  }

  /**
   * Reads the CA certificates a client trusts.
   *
   * @param caFile PEM file of one or more certificates
   * @throws TlsFileException if the file is missing, unreadable, or holds no certificate that parses; its
   *     message names it
   */
  public static TlsTrust load(Path caFile) throws TlsFileException {
    Objects.requireNonNull(caFile, "caFile");
    return new TlsTrust(caFile, List.copyOf(Pem.certificates("CA file", caFile)));
  }

  /** The file the authorities were read from. */
  public Path caFile() {
    return caFile;
  }

  /** The trusted certificates. */
  public List<X509Certificate> authorities() {
    return authorities;
  }

  /**
   * A Netty client context trusting only these authorities, with hostname verification; make each
   * connection's handler with {@code newHandler(alloc, host, port)} so that the host is the one verified
   * (and sent as SNI).
   *
   * @throws IllegalStateException if the JDK refuses the certificates (cannot happen after {@link #load})
   */
  public SslContext nettyClientContext() {
    try {
      return SslContextBuilder.forClient().trustManager(authorities)
          .endpointIdentificationAlgorithm(HOSTNAME_VERIFICATION).build();
    } catch (SSLException e) {
      throw new IllegalStateException("cannot make a TLS context trusting " + this + ": " + e.getMessage(), e);
    }
  }

  /**
   * A JDK client {@link SSLContext} trusting only these authorities, for a JDK {@code HttpClient} (which
   * verifies host names itself).
   *
   * @throws IllegalStateException if the JDK cannot make one (cannot happen after {@link #load})
   */
  public SSLContext sslContext() {
    try {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      for (int i = 0; i < authorities.size(); i++) {
        store.setCertificateEntry("ca-" + i, authorities.get(i));
      }
      TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      trust.init(store);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(null, trust.getTrustManagers(), new SecureRandom());
      return context;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot make a TLS context trusting " + this + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return caFile + " (" + authorities.stream().map(c -> c.getSubjectX500Principal().getName()).toList() + ")";
  }
}
