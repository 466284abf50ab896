package dev.tally.coordinator.security;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Certificates made inside a test, written as PEM files under the test's own directory: a CA, and leaf
 * certificates it signs for given host names and IP addresses. Shared through the coordinator's test jar
 * with the modules that test TLS listeners (cli, http). BouncyCastle builds the certificates (the JDK has no
 * public API for it); the code under test reads them with the JDK only.
 *
 * <pre>{@code
 * TestCertificates.Authority ca = TestCertificates.authority("Test CA");
 * TestCertificates.Issued server = ca.issue("coordinator", List.of("localhost"), List.of("127.0.0.1"));
 * Path caPem = ca.writeCertificate(dir.resolve("ca.pem"));
 * Path certPem = server.writeChain(dir.resolve("cert.pem"));
 * Path keyPem = server.writeKey(dir.resolve("key.pem"));     // PKCS#8, mode 600
 * }</pre>
 *
 * <p>Keys are EC P-256 unless asked for RSA (which takes longer to generate). Thread-safe.
 */
public final class TestCertificates {
  private static final AtomicLong SERIAL = new AtomicLong(System.currentTimeMillis());

  /** How long certificates are valid by default: from an hour ago to a day ahead. */
  public static final Duration VALIDITY = Duration.ofDays(1);

  private TestCertificates() {}

  /** A new self-signed CA with an EC key. */
  public static Authority authority(String commonName) {
    KeyPair keys = keyPair(false);
    X500Name name = new X500Name("CN=" + commonName);
    Instant now = Instant.now();
    X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name, serial(), Date.from(now.minus(Duration.ofHours(1))),
        Date.from(now.plus(VALIDITY)), name, keys.getPublic());
    try {
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      builder.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return new Authority(keys, sign(builder, keys.getPrivate()));
  }

  /** A CA, able to issue leaf certificates. */
  public static final class Authority {
    private final KeyPair keys;
    private final X509Certificate certificate;

    private Authority(KeyPair keys, X509Certificate certificate) {
      this.keys = keys;
      this.certificate = certificate;
    }

    public X509Certificate certificate() {
      return certificate;
    }

    /** A leaf for these DNS names and IP addresses, EC key, valid from an hour ago for {@link #VALIDITY}. */
    public Issued issue(String commonName, List<String> dnsNames, List<String> ipAddresses) {
      Instant now = Instant.now();
      return issue(commonName, dnsNames, ipAddresses, false, now.minus(Duration.ofHours(1)), now.plus(VALIDITY));
    }

    /**
     * A leaf with every choice given.
     *
     * @param rsa an RSA 2048 key instead of EC P-256
     * @param notBefore start of validity
     * @param notAfter end of validity
     */
    public Issued issue(String commonName, List<String> dnsNames, List<String> ipAddresses, boolean rsa,
        Instant notBefore, Instant notAfter) {
      KeyPair leafKeys = keyPair(rsa);
      X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(
          org.bouncycastle.asn1.x500.X500Name.getInstance(certificate.getSubjectX500Principal().getEncoded()),
          serial(), Date.from(notBefore), Date.from(notAfter), new X500Name("CN=" + commonName), leafKeys.getPublic());
      List<GeneralName> names = new ArrayList<>();
      dnsNames.forEach(n -> names.add(new GeneralName(GeneralName.dNSName, n)));
      ipAddresses.forEach(ip -> names.add(new GeneralName(GeneralName.iPAddress, ip)));
      try {
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        if (!names.isEmpty()) {
          builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names.toArray(new GeneralName[0])));
        }
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      return new Issued(leafKeys, List.of(sign(builder, keys.getPrivate()), certificate));
    }

    /** Writes the CA's certificate as PEM; returns {@code file}. */
    public Path writeCertificate(Path file) throws IOException {
      return write(file, List.of(certificate));
    }
  }

  /** A leaf certificate, its chain (leaf, then the CA) and its key. */
  public static final class Issued {
    private final KeyPair keys;
    private final List<X509Certificate> chain;

    private Issued(KeyPair keys, List<X509Certificate> chain) {
      this.keys = keys;
      this.chain = chain;
    }

    public X509Certificate certificate() {
      return chain.get(0);
    }

    public PrivateKey privateKey() {
      return keys.getPrivate();
    }

    /** Writes the leaf then the CA as PEM; returns {@code file}. */
    public Path writeChain(Path file) throws IOException {
      return write(file, chain);
    }

    /** Writes the key as unencrypted PKCS#8 PEM ({@code BEGIN PRIVATE KEY}), mode 600; returns {@code file}. */
    public Path writeKey(Path file) throws IOException {
      StringWriter out = new StringWriter();
      try (JcaPEMWriter pem = new JcaPEMWriter(out)) {
        pem.writeObject(new JcaPKCS8Generator(keys.getPrivate(), null));
      }
      return ownerOnly(Files.writeString(file, out.toString()));
    }

    /**
     * Writes the key in OpenSSL's traditional form: PKCS#1 ({@code BEGIN RSA PRIVATE KEY}) for RSA, SEC1
     * ({@code BEGIN EC PRIVATE KEY}) for EC; mode 600. Returns {@code file}.
     */
    public Path writeTraditionalKey(Path file) throws IOException {
      StringWriter out = new StringWriter();
      try (JcaPEMWriter pem = new JcaPEMWriter(out)) {
        pem.writeObject(keys.getPrivate());
      }
      return ownerOnly(Files.writeString(file, out.toString()));
    }
  }

  private static Path write(Path file, List<X509Certificate> certificates) throws IOException {
    StringWriter out = new StringWriter();
    try (JcaPEMWriter pem = new JcaPEMWriter(out)) {
      for (X509Certificate c : certificates) {
        pem.writeObject(c);
      }
    }
    return Files.writeString(file, out.toString());
  }

  private static Path ownerOnly(Path file) throws IOException {
    try {
      Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    } catch (UnsupportedOperationException e) {
      // no POSIX permissions: nothing to restrict
    }
    return file;
  }

  private static KeyPair keyPair(boolean rsa) {
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance(rsa ? "RSA" : "EC");
      if (rsa) {
        generator.initialize(2048);
      } else {
        generator.initialize(new ECGenParameterSpec("secp256r1"));
      }
      return generator.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey issuerKey) {
    try {
      String algorithm = issuerKey.getAlgorithm().equals("RSA") ? "SHA256withRSA" : "SHA256withECDSA";
      ContentSigner signer = new JcaContentSignerBuilder(algorithm).build(issuerKey);
      return new JcaX509CertificateConverter().getCertificate(builder.build(signer));
    } catch (GeneralSecurityException | org.bouncycastle.operator.OperatorCreationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static BigInteger serial() {
    return BigInteger.valueOf(SERIAL.incrementAndGet());
  }
}
