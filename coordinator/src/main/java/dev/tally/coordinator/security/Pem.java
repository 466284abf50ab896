package dev.tally.coordinator.security;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads PEM files (RFC 7468): X.509 certificates and unencrypted private keys, with errors that name the
 * file and say what to do. Used by {@link TlsIdentity} and {@link TlsTrust}, which own what a valid pair
 * and a valid trust file are.
 *
 * <p>Keys: PKCS#8 ({@code BEGIN PRIVATE KEY}: what {@code openssl genpkey} and {@code openssl req -newkey}
 * write) of RSA, EC, Ed25519 or Ed448, and PKCS#1 RSA ({@code BEGIN RSA PRIVATE KEY}: older {@code openssl
 * genrsa}), which is wrapped into PKCS#8 here. Encrypted keys and SEC1 EC keys ({@code BEGIN EC PRIVATE KEY})
 * are refused with the {@code openssl} command that converts them.
 *
 * <p>Stateless and thread-safe.
 */
final class Pem {
  /**
   * The largest PEM file read: a chain of a dozen 4096-bit certificates is under 30 KiB, so 1 MiB is no
   * real file's limit, only a guard against reading a wrong, huge file whole.
   */
  static final int MAX_FILE_BYTES = 1 << 20;

  private static final Pattern BLOCK = Pattern.compile(
      "-----BEGIN ([A-Z0-9 ]+)-----\\s*([A-Za-z0-9+/=\\s]*?)-----END \\1-----");

  /** The key algorithms tried on a PKCS#8 key, most common first. */
  private static final List<String> KEY_ALGORITHMS = List.of("RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS", "DSA");

  /** One block: its label ({@code CERTIFICATE}) and its decoded bytes. */
  record Block(String label, byte[] der) {}

  private Pem() {}

  /**
   * The PEM blocks of a file, in order.
   *
   * @param what what the file is, for messages ("certificate file")
   * @throws TlsFileException if the file is missing, unreadable, too large, or a block's base64 is broken
   */
  static List<Block> read(String what, Path file) throws TlsFileException {
    if (Files.isDirectory(file)) {
      throw new TlsFileException(file, what + " " + file + " is a directory");
    }
    byte[] bytes;
    try (var in = Files.newInputStream(file)) {
      bytes = in.readNBytes(MAX_FILE_BYTES + 1);
    } catch (NoSuchFileException e) {
      throw new TlsFileException(file, what + " " + file + " does not exist");
    } catch (AccessDeniedException e) {
      throw new TlsFileException(file, "cannot read the " + what + " " + file + ": permission denied");
    } catch (IOException e) {
      throw new TlsFileException(file, "cannot read the " + what + " " + file + ": " + e.getMessage());
    }
    if (bytes.length > MAX_FILE_BYTES) {
      throw new TlsFileException(file, what + " " + file + " is larger than " + MAX_FILE_BYTES / 1024
          + " KiB: not a PEM file of certificates or a key");
    }
    String text = new String(bytes, StandardCharsets.ISO_8859_1); // PEM is ASCII; this decoding never fails
    List<Block> blocks = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      try {
        blocks.add(new Block(m.group(1), Base64.getMimeDecoder().decode(m.group(2))));
      } catch (IllegalArgumentException e) {
        throw new TlsFileException(file, what + " " + file + ": the " + m.group(1) + " block is not valid base64 ("
            + e.getMessage() + ")");
      }
    }
    return blocks;
  }

  /**
   * The certificates of a file, in order (a chain: the leaf first, then its issuers).
   *
   * @throws TlsFileException if the file cannot be read, holds no certificate, or a certificate does not
   *     parse
   */
  static List<X509Certificate> certificates(String what, Path file) throws TlsFileException {
    List<Block> blocks = read(what, file);
    List<X509Certificate> certificates = new ArrayList<>();
    CertificateFactory factory;
    try {
      factory = CertificateFactory.getInstance("X.509");
    } catch (CertificateException e) {
      throw new IllegalStateException("every Java platform reads X.509", e);
    }
    int index = 0;
    for (Block block : blocks) {
      if (!block.label().equals("CERTIFICATE")) {
        continue; // a key beside the certificates (a combined file) is the key loader's
      }
      index++;
      try {
        certificates.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(block.der())));
      } catch (CertificateException e) {
        throw new TlsFileException(file, what + " " + file + ": certificate " + index + " does not parse: "
            + e.getMessage());
      }
    }
    if (certificates.isEmpty()) {
      boolean hasKey = blocks.stream().anyMatch(b -> b.label().endsWith("PRIVATE KEY"));
      throw new TlsFileException(file, what + " " + file + " holds no certificate (no -----BEGIN CERTIFICATE-----"
          + " block)" + (hasKey ? "; it holds a private key: were the certificate and key files swapped?" : ""));
    }
    return certificates;
  }

  /**
   * The one private key of a file; warns if other users may read the file.
   *
   * @throws TlsFileException if the file cannot be read, holds no key or more than one, or the key is
   *     encrypted, in a form not read here, or does not parse
   */
  static PrivateKey privateKey(String what, Path file) throws TlsFileException {
    List<Block> keys = read(what, file).stream().filter(b -> b.label().endsWith("PRIVATE KEY")).toList();
    if (keys.isEmpty()) {
      throw new TlsFileException(file, what + " " + file + " holds no private key (no -----BEGIN PRIVATE KEY-----"
          + " block)");
    }
    if (keys.size() > 1) {
      throw new TlsFileException(file, what + " " + file + " holds " + keys.size() + " private keys; give a file with one");
    }
    Block key = keys.get(0);
    String convert = "convert it with: openssl pkcs8 -topk8 -nocrypt -in " + file + " -out key.pem";
    byte[] pkcs8 = switch (key.label()) {
      case "PRIVATE KEY" -> key.der();
      case "RSA PRIVATE KEY" -> wrapPkcs1Rsa(key.der());
      case "ENCRYPTED PRIVATE KEY" -> throw new TlsFileException(file, what + " " + file
          + " is encrypted, and Tally reads unencrypted keys only (protect the file instead: chmod 600); " + convert);
      case "EC PRIVATE KEY" -> throw new TlsFileException(file, what + " " + file
          + " is an EC key in the SEC1 form, which Tally does not read; " + convert);
      default -> throw new TlsFileException(file, what + " " + file + " holds a " + key.label()
          + ", which Tally does not read; " + convert);
    };
    for (String algorithm : KEY_ALGORITHMS) {
      try {
        PrivateKey parsed = KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
        Secrets.warnIfOthersCanRead(what + " " + file, file);
        return parsed;
      } catch (InvalidKeySpecException | java.security.NoSuchAlgorithmException | ClassCastException e) {
        // not this algorithm; try the next
      }
    }
    throw new TlsFileException(file, what + " " + file + ": the private key does not parse as an RSA, EC, Ed25519,"
        + " Ed448 or DSA key");
  }

  /**
   * A PKCS#1 RSAPrivateKey wrapped as PKCS#8 PrivateKeyInfo (RFC 5208): SEQUENCE { INTEGER 0, SEQUENCE {
   * OID 1.2.840.113549.1.1.1, NULL }, OCTET STRING pkcs1 }.
   */
  private static byte[] wrapPkcs1Rsa(byte[] pkcs1) {
    byte[] version = {0x02, 0x01, 0x00};
    byte[] algorithm = {0x30, 0x0d, 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86, (byte) 0xf7, 0x0d, 0x01, 0x01,
        0x01, 0x05, 0x00};
    byte[] octets = der(0x04, pkcs1);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes(version);
    body.writeBytes(algorithm);
    body.writeBytes(octets);
    return der(0x30, body.toByteArray());
  }

  /** A DER tag-length-value with a definite length. */
  private static byte[] der(int tag, byte[] content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    int length = content.length;
    if (length < 0x80) {
      out.write(length);
    } else {
      int bytes = (Integer.SIZE - Integer.numberOfLeadingZeros(length) + 7) / 8;
      out.write(0x80 | bytes);
      for (int i = bytes - 1; i >= 0; i--) {
        out.write(length >>> (8 * i));
      }
    }
    out.writeBytes(content);
    return out.toByteArray();
  }
}
