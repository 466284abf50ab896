package dev.tally.http;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * A run's upload, received whole before anything is written to the store: the request body is streamed
 * to a spool file on disk (never held in memory), its fingerprint computed on the way, and the store's
 * writer is held only while the spooled cases are inserted, not while a slow client sends them.
 *
 * <p><b>Spool format</b>: NDJSON, the run's fields on line 1 and one case per line after it. An {@code
 * application/x-ndjson} body is that already and is spooled as it came, so the spool's line numbers are the
 * body's; an {@code application/json} body ({@code {"evaluator": ..., "cases": [...]}}) is rewritten as it
 * streams, its run fields on line 1 and its {@code cases} one per line, so case {@code /cases/N} is spool
 * line {@code N + 2} ({@link #placeOfLine}).
 *
 * <p><b>Fingerprint</b>: SHA-256 over the method, the path and the body's bytes as received, each part
 * ended by a newline (the design's request fingerprint): one key with another body or path has another
 * fingerprint.
 *
 * <p>Thread-safety: one instance per request, used by its thread; {@link #close} deletes the spool.
 */
final class Upload implements AutoCloseable {
  /** The JSON body's media type. */
  static final String JSON = "application/json";
  /** The streamed body's media type: the run's fields on line 1, then one case per line. */
  static final String NDJSON = "application/x-ndjson";

  /**
   * Reads a JSON body's numbers as they are written ({@code BigDecimal}), so the rewrite into lines changes
   * no value: read as doubles, {@code 1e400} was written back as the string {@code "Infinity"}, past the case
   * grammar's number rule ({@link dev.tally.core.cases.CaseLines#numberProblem}), which now judges it on its
   * line as it judges an NDJSON body's.
   */
  private static final ObjectMapper MAPPER = new ObjectMapper()
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  /** A spool file's name: {@code upload-PID-RANDOM.ndjson}. */
  private static final String SPOOL_PREFIX = "upload-";
  private static final String SPOOL_SUFFIX = ".ndjson";
  /** A JSON body's cases while its run fields may still come: {@code cases-PID-RANDOM.part}. */
  private static final String PART_PREFIX = "cases-";
  private static final String PART_SUFFIX = ".part";
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Upload.class);

  /**
   * Deletes the spool files that processes killed mid-upload left in {@code spoolDir}: a spool file is named
   * for the process writing it, and is deleted only once that process is gone ({@link
   * dev.tally.store.ProcessFiles}). A standby server that starts beside its leader, on the same store and so
   * the same spool directory, leaves the leader's uploads alone: deleting every spool file at start made the
   * leader's upload in progress end in a 500.
   *
   * @return how many were deleted
   */
  static int deleteLeftovers(Path spoolDir) {
    int deleted = dev.tally.store.ProcessFiles.removeLeftovers(spoolDir, SPOOL_PREFIX)
        + dev.tally.store.ProcessFiles.removeLeftovers(spoolDir, PART_PREFIX);
    if (deleted > 0) {
      log.info("deleted {} upload spool files that servers killed mid-upload left in {}", deleted, spoolDir);
    }
    return deleted;
  }

  private final Path spool;
  private final boolean ndjson;
  private final String fingerprint;
  private final long bytes;

  private Upload(Path spool, boolean ndjson, String fingerprint, long bytes) {
    this.spool = spool;
    this.ndjson = ndjson;
    this.fingerprint = fingerprint;
    this.bytes = bytes;
  }

  /**
   * The media type of a body, from its {@code Content-Type} (parameters ignored).
   *
   * @throws ProblemException 415 naming {@code Content-Type} if it is neither {@value #JSON} nor {@value #NDJSON}
   */
  static boolean isNdjson(String contentType) {
    String type = contentType == null ? "" : contentType.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
    if (type.equals(NDJSON)) {
      return true;
    }
    if (type.equals(JSON)) {
      return false;
    }
    throw ProblemException.header(ProblemType.UNSUPPORTED_MEDIA_TYPE, "Content-Type",
        "a run is " + JSON + " (its cases inline) or " + NDJSON + " (its fields on the first line, then one case per line), got '"
            + (contentType == null ? "" : contentType) + "'");
  }

  /**
   * Receives a body into a spool file in {@code spoolDir}.
   *
   * @param maxBytes the largest body taken, in bytes
   * @throws ProblemException 413 if the body is larger than {@code maxBytes}; 400 if a JSON body is not JSON
   *     or not an object with a {@code cases} array of objects (naming the line, and the field when known)
   * @throws IOException if the client goes away or the spool cannot be written (the spool is deleted)
   */
  static Upload receive(InputStream body, boolean ndjson, String method, String path, Path spoolDir, long maxBytes)
      throws IOException {
    MessageDigest digest = fingerprintDigest(method, path);
    Limited limited = new Limited(body, maxBytes);
    InputStream in = new DigestInputStream(limited, digest);
    Files.createDirectories(spoolDir);
    Path spool = Files.createTempFile(spoolDir, dev.tally.store.ProcessFiles.ownPrefix(SPOOL_PREFIX), SPOOL_SUFFIX);
    try {
      try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(spool), 64 * 1024)) {
        if (ndjson) {
          in.transferTo(out);
        } else {
          rewriteJson(in, out, spoolDir);
          in.transferTo(OutputStream.nullOutputStream()); // anything after the object still counts for the fingerprint
        }
      }
      return new Upload(spool, ndjson, HexFormat.of().formatHex(digest.digest()), limited.count);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(spool);
      throw e;
    }
  }

  /** Streams a JSON body into the spool format: its run fields on line 1, then each case on its own line. */
  private static void rewriteJson(InputStream in, OutputStream out, Path spoolDir) throws IOException {
    JsonFactory factory = MAPPER.getFactory();
    ObjectNode fields = MAPPER.createObjectNode();
    Path casesPart = null;
    try (JsonParser p = factory.createParser(in)) {
      p.disable(JsonParser.Feature.AUTO_CLOSE_SOURCE);
      // As strict as the case grammar (CaseLines): a repeated field is refused, never "the last one wins".
      p.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw malformed(p, null, "the body must be a JSON object with an evaluator and its cases");
      }
      // The cases go to a second file as they stream, since the run's fields may come after them.
      casesPart = Files.createTempFile(spoolDir, dev.tally.store.ProcessFiles.ownPrefix(PART_PREFIX), PART_SUFFIX);
      try (OutputStream cases = new BufferedOutputStream(Files.newOutputStream(casesPart), 64 * 1024);
          JsonGenerator g = factory.createGenerator(cases)) {
        g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
        boolean sawCases = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          JsonToken value = p.nextToken();
          if (name.equals("cases")) {
            if (value != JsonToken.START_ARRAY) {
              throw ProblemException.field(ProblemType.INVALID_REQUEST, "/cases", "/cases: cases must be an array of objects, each with a string id");
            }
            sawCases = true;
            int index = 0;
            while (p.nextToken() != JsonToken.END_ARRAY) {
              if (p.currentToken() != JsonToken.START_OBJECT) {
                throw ProblemException.field(ProblemType.INVALID_CASE, "/cases/" + index, "/cases/" + index + ": a case must be a JSON object with a string id");
              }
              JsonNode c = p.readValueAsTree();
              g.writeTree(c);
              g.flush();
              cases.write('\n');
              index++;
            }
          } else {
            fields.set(name, p.readValueAsTree());
          }
        }
        if (p.currentToken() != JsonToken.END_OBJECT) {
          throw malformed(p, null, "the body must be one JSON object");
        }
        if (p.nextToken() != null) {
          throw malformed(p, null, "the body holds something after its JSON object");
        }
        if (!sawCases) {
          throw ProblemException.field(ProblemType.INVALID_REQUEST, "/cases",
              "/cases: the run has no cases; send them inline (\"cases\": [{\"id\": ...}, ...]) or as " + NDJSON);
        }
      }
      out.write(MAPPER.writeValueAsBytes(fields));
      out.write('\n');
      try (InputStream cases = Files.newInputStream(casesPart)) {
        cases.transferTo(out);
      }
    } catch (JsonParseException e) {
      throw malformed(null, e, dev.tally.core.JsonErrors.text(e));
    } catch (com.fasterxml.jackson.core.exc.StreamConstraintsException e) {
      // Nesting deeper than 1,000 or a string longer than Jackson's limit: the body's fault, not the server's.
      throw ProblemException.of(ProblemType.MALFORMED_JSON, "the body exceeds what the server reads of JSON: "
          + dev.tally.core.JsonErrors.text(e));
    } finally {
      if (casesPart != null) {
        Files.deleteIfExists(casesPart);
      }
    }
  }

  private static ProblemException malformed(JsonParser p, JsonParseException e, String what) {
    var location = e != null ? e.getLocation() : p.currentLocation();
    long line = location == null ? 0 : location.getLineNr();
    String at = location == null ? "" : "request body line " + location.getLineNr() + ", column " + location.getColumnNr() + ": ";
    return line > 0 ? ProblemException.line(ProblemType.MALFORMED_JSON, line, null, at + what)
        : ProblemException.of(ProblemType.MALFORMED_JSON, what);
  }

  /** The spool: NDJSON, the run's fields on line 1, then one case per line. */
  Path spool() {
    return spool;
  }

  /** Whether the body was NDJSON (the spool's line numbers are then the body's). */
  boolean ndjson() {
    return ndjson;
  }

  /** The request's fingerprint: SHA-256 hex over method, path and body. */
  String fingerprint() {
    return fingerprint;
  }

  /** The body's size in bytes. */
  long bytes() {
    return bytes;
  }

  /**
   * Where spool line {@code line} was in the request, for a problem: the same line of an NDJSON body, or a
   * JSON body's case {@code /cases/N} (line 1 is the run's fields).
   *
   * @return a problem of {@code type} at that place, with {@code detail}
   */
  ProblemException placeOfLine(ProblemType type, long line, String detail) {
    if (ndjson) {
      return ProblemException.line(type, line, null, detail);
    }
    String pointer = line <= 1 ? null : "/cases/" + (line - 2);
    return ProblemException.field(type, pointer, detail);
  }

  /** Deletes the spool. */
  @Override
  public void close() throws IOException {
    Files.deleteIfExists(spool);
  }

  /**
   * The fingerprint of a request whose body is in memory (a cancel's): as {@link #fingerprint()}, the one rule.
   */
  static String fingerprint(String method, String path, byte[] body) {
    MessageDigest digest = fingerprintDigest(method, path);
    digest.update(body);
    return HexFormat.of().formatHex(digest.digest());
  }

  /**
   * A digest fed the method and the path as the router reads it ({@link ApiServer#routed}: {@code /runs/}
   * is {@code /runs}, which a key sent to the other got a 422 for), each ended by a newline: the body's bytes
   * come next.
   */
  private static MessageDigest fingerprintDigest(String method, String path) {
    MessageDigest digest = sha256();
    digest.update((method + "\n" + ApiServer.routed(path) + "\n").getBytes(StandardCharsets.UTF_8));
    return digest;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /** Counts what is read and refuses past a limit (413), before the bytes reach the spool. */
  private static final class Limited extends FilterInputStream {
    private final long max;
    long count;

    Limited(InputStream in, long max) {
      super(in);
      this.max = max;
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      if (b >= 0) {
        add(1);
      }
      return b;
    }

    @Override
    public int read(byte[] buf, int off, int len) throws IOException {
      int n = super.read(buf, off, len);
      if (n > 0) {
        add(n);
      }
      return n;
    }

    private void add(long n) {
      count += n;
      if (count > max) {
        throw ProblemException.of(ProblemType.BODY_TOO_LARGE, "the body is larger than this server takes: at most "
            + max + " bytes" + (max < (1L << 32) ? " (send large datasets as " + NDJSON + ")" : ""));
      }
    }
  }
}
