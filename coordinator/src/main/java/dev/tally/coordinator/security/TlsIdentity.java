package dev.tally.coordinator.security;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.security.interfaces.RSAPrivateCrtKey;
import java.security.interfaces.RSAPublicKey;
import java.time.Clock;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

/**
 * A listener's TLS identity: a certificate chain and its private key, read from the two PEM files a user
 * gives ({@code --tls-cert}, {@code --tls-key}). The one owner of what a valid pair is; the worker port
 * and the HTTP API both take their TLS from it, in the form each needs ({@link #nettyServerContext()},
 * {@link #sslContext()}, {@link #keyStore(char[])}).
 *
 * <p><b>Valid</b> means, checked when loading, each failure named with its file:
 *
 * <ul>
 *   <li>the certificate file holds at least one PEM certificate, the first being this listener's own (the
 *       leaf), any others its issuers in order (as a CA hands them out: {@code fullchain.pem});
 *   <li>the key file holds exactly one unencrypted private key (PKCS#8 of RSA, EC, Ed25519 or Ed448, or
 *       PKCS#1 RSA; see {@link Pem});
 *   <li>the key is the leaf's (for RSA, the same modulus and exponent; for other kinds, a signature made
 *       with the key verifies with the certificate's public key): a key of another certificate would make
 *       every handshake fail with a message that names neither file;
 *   <li>the leaf is within its validity period now: an expired certificate would be refused by every
 *       client.
 * </ul>
 *
 * One file may hold both the certificate and the key (give it as both). A key file that other users can
 * read is accepted with a warning.
 *
 * <p>Immutable and thread-safe; {@link #toString()} names the certificate and files, never key material.
 */
public final class TlsIdentity {
  /** The alias of the one entry of {@link #keyStore(char[])}. */
  public static final String KEY_ALIAS = "tally";

  private final Path certFile;
  private final Path keyFile;
  private final List<X509Certificate> chain;
  private final PrivateKey key;

  private TlsIdentity(Path certFile, Path keyFile, List<X509Certificate> chain, PrivateKey key) {
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.chain = chain;
    this.key = key;
  }

  /**
   * Reads and checks a certificate chain and its key, judging validity by the system clock.
   *
   * @param certFile PEM certificate chain, leaf first
   * @param keyFile PEM private key of the leaf
   * @throws TlsFileException if either file is unusable or they do not belong together; its message names
   *     the file
   */
  public static TlsIdentity load(Path certFile, Path keyFile) throws TlsFileException {
    return load(certFile, keyFile, Clock.systemUTC());
  }

  /**
   * Reads and checks a certificate chain and its key, judging validity at {@code clock}'s instant.
   *
   * @throws TlsFileException as {@link #load(Path, Path)} does
   */
  public static TlsIdentity load(Path certFile, Path keyFile, Clock clock) throws TlsFileException {
    Objects.requireNonNull(certFile, "certFile");
    Objects.requireNonNull(keyFile, "keyFile");
    List<X509Certificate> chain = List.copyOf(Pem.certificates("certificate file", certFile));
    PrivateKey key = Pem.privateKey("key file", keyFile);
    X509Certificate leaf = chain.get(0);
    Instant now = clock.instant();
    try {
      leaf.checkValidity(Date.from(now));
    } catch (CertificateExpiredException e) {
      throw new TlsFileException(certFile, "the certificate in " + certFile + " (" + subject(leaf) + ") expired on "
          + leaf.getNotAfter().toInstant());
    } catch (CertificateNotYetValidException e) {
      throw new TlsFileException(certFile, "the certificate in " + certFile + " (" + subject(leaf)
          + ") is not valid before " + leaf.getNotBefore().toInstant());
    }
    if (!belongTogether(key, leaf.getPublicKey())) {
      throw new TlsFileException(keyFile, "the key in " + keyFile + " is not the key of the certificate in " + certFile
          + " (" + subject(leaf) + "): give the key that was made with this certificate");
    }
    return new TlsIdentity(certFile, keyFile, chain, key);
  }

  /** The certificate file it was read from. */
  public Path certFile() {
    return certFile;
  }

  /** The key file it was read from. */
  public Path keyFile() {
    return keyFile;
  }

  /** The chain, the listener's own certificate first. */
  public List<X509Certificate> chain() {
    return chain;
  }

  /**
   * A Netty server context for this identity (the JDK's TLS; TLS 1.3 and 1.2, Netty's cipher defaults), for
   * the worker port.
   *
   * @throws IllegalStateException if the JDK refuses the key (cannot happen for a key that passed {@link
   *     #load})
   */
  public SslContext nettyServerContext() {
    try {
      return SslContextBuilder.forServer(key, chain).build();
    } catch (SSLException e) {
      throw new IllegalStateException("cannot make a TLS context of " + this + ": " + e.getMessage(), e);
    }
  }

  /**
   * A JDK server {@link SSLContext} for this identity (TLS), for a listener that takes one (the HTTP API's
   * Jetty).
   *
   * @throws IllegalStateException if the JDK cannot make one (cannot happen for a key that passed {@link
   *     #load})
   */
  public SSLContext sslContext() {
    try {
      char[] password = new char[0];
      KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keys.init(keyStore(password), password);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys.getKeyManagers(), null, new SecureRandom());
      return context;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot make a TLS context of " + this + ": " + e.getMessage(), e);
    }
  }

  /**
   * A new in-memory PKCS#12 key store holding this identity as one entry under {@link #KEY_ALIAS}, protected
   * by {@code password}, for a listener configured with a key store.
   *
   * @throws IllegalStateException if the JDK cannot make one (cannot happen for a key that passed {@link
   *     #load})
   */
  public KeyStore keyStore(char[] password) {
    try {
      KeyStore store = KeyStore.getInstance("PKCS12");
      store.load(null, password);
      store.setKeyEntry(KEY_ALIAS, key, password, chain.toArray(new X509Certificate[0]));
      return store;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalStateException("cannot make a key store of " + this + ": " + e.getMessage(), e);
    }
  }

  /** The certificate's subject and expiry and the two files; never key material. */
  @Override
  public String toString() {
    X509Certificate leaf = chain.get(0);
    return subject(leaf) + ", valid until " + leaf.getNotAfter().toInstant() + " (" + certFile
        + (keyFile.equals(certFile) ? "" : ", key " + keyFile) + ")";
  }

  private static String subject(X509Certificate certificate) {
    return certificate.getSubjectX500Principal().getName();
  }

  /** Whether {@code key} is the private half of {@code publicKey}. */
  private static boolean belongTogether(PrivateKey key, PublicKey publicKey) {
    if (key instanceof RSAPrivateCrtKey rsa) {
      return publicKey instanceof RSAPublicKey pub && rsa.getModulus().equals(pub.getModulus())
          && rsa.getPublicExponent().equals(pub.getPublicExponent());
    }
    String algorithm = switch (key.getAlgorithm()) {
      case "EC" -> "SHA256withECDSA";
      case "DSA" -> "SHA256withDSA";
      case "Ed25519", "Ed448", "EdDSA" -> key.getAlgorithm();
      default -> null;
    };
    if (algorithm == null || !key.getAlgorithm().equals(publicKey.getAlgorithm())
        && !(key.getAlgorithm().startsWith("Ed") && publicKey.getAlgorithm().startsWith("Ed"))) {
      return false;
    }
    try {
      byte[] probe = "tally: does this key belong to this certificate?".getBytes(StandardCharsets.US_ASCII);
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(probe);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(publicKey);
      verifier.update(probe);
      return verifier.verify(signature);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }
}
