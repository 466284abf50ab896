package dev.tally.cli.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.cli.DatasetException;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSourceException;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * A dataset file as the body of a submission ({@code application/x-ndjson}): the run's fields on line 1, then
 * the file's bytes as they are, so that the server reads the cases with the same grammar as {@code tally run}
 * and a dataset of any size is never whole in memory, here or there.
 *
 * <p><b>Checked first.</b> {@link #check} reads the file once, as a stream, through the case grammar's one
 * owner ({@link CaseLines}) and the exec template's fields, before any key is made or request sent: a bad
 * line stops the submission with the file and line ({@code cases.jsonl line 7: ...}) and exit code 2, and
 * nothing reaches the server. Repeated ids are the one thing not checked here (it would take every id in
 * memory): the server refuses them, naming both lines of the body, whose line {@code N + 1} is the
 * dataset's line {@code N} ({@link #datasetLine}). The same pass digests the file's bytes: the submission's
 * identity for its state file, and the check that what is sent is what was checked.
 *
 * <p><b>Sent as checked.</b> The body digests the file again as it streams; if the bytes differ (the file
 * changed after the check) the body fails before its last byte ({@link ApiClient.BodyFailure}), so the
 * server never sees a whole request and makes no run, and the submission stops. A UTF-8 byte-order mark at
 * the start of the file is left out of the body: there it would be the start of line 2, not of the stream.
 *
 * <p>Thread-safety: immutable; each {@link #body()} is a fresh stream.
 */
public final class DatasetUpload {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

  private final Path file;
  private final byte[] header;
  private final String sha256;
  private final long fileBytes;
  private final int bomBytes;
  private final int cases;

  private DatasetUpload(Path file, byte[] header, String sha256, long fileBytes, int bomBytes, int cases) {
    this.file = file;
    this.header = header;
    this.sha256 = sha256;
    this.fileBytes = fileBytes;
    this.bomBytes = bomBytes;
    this.cases = cases;
  }

  /**
   * Reads and checks a dataset file.
   *
   * @param file the dataset, JSON Lines
   * @param submission the run's fields, one JSON object on one line (no line break)
   * @param missingField the first field a case lacks that the evaluator needs (the exec template's rule), or
   *     empty
   * @param what the option that needs the fields, for the message ({@code --cmd})
   * @throws DatasetException naming the file and line: unreadable, a line the case grammar refuses, a case
   *     without a field the template uses, or no case at all
   */
  public static DatasetUpload check(Path file, String submission, Function<JsonNode, Optional<String>> missingField, String what)
      throws DatasetException {
    Objects.requireNonNull(submission, "submission");
    if (submission.indexOf('\n') >= 0 || submission.indexOf('\r') >= 0) {
      throw new IllegalArgumentException("the run's fields must be one line");
    }
    MessageDigest sha = newSha256();
    int count = 0;
    int bom;
    try (InputStream raw = Files.newInputStream(file);
        InputStream in = new DigestInputStream(new BufferedInputStream(raw, 1 << 16), sha)) {
      CaseLines reader = CaseLines.of(in, file.toString());
      for (CaseRecord c; (c = reader.next()) != null; ) {
        count++;
        JsonNode caseObject = parse(c);
        Optional<String> missing = missingField.apply(caseObject);
        if (missing.isPresent()) {
          throw DatasetException.missingField(file, reader.lineOf(c.position()), c.caseId(), caseObject, missing.get(), what);
        }
      }
      byte[] start = new byte[3];
      try (InputStream again = Files.newInputStream(file)) {
        bom = again.readNBytes(start, 0, 3) == 3 && Arrays.equals(start, BOM) ? 3 : 0;
      }
    } catch (CaseSourceException e) {
      throw new DatasetException(file, e.line(), e.detail());
    } catch (IOException e) {
      throw DatasetException.cannotRead(file, e);
    }
    if (count == 0) {
      throw new DatasetException(file, 0, "dataset has no cases");
    }
    long size;
    try {
      size = Files.size(file);
    } catch (IOException e) {
      throw DatasetException.cannotRead(file, e);
    }
    byte[] header = (submission + "\n").getBytes(StandardCharsets.UTF_8);
    return new DatasetUpload(file, header, HexFormat.of().formatHex(sha.digest()), size, bom, count);
  }

  private static JsonNode parse(CaseRecord c) {
    try {
      return JSON.readTree(c.caseJson());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a case the grammar accepted is JSON", e);
    }
  }

  /** A SHA-256 digest (hex) of the file's bytes as checked. */
  public String sha256() {
    return sha256;
  }

  /** How many cases the file holds. */
  public int cases() {
    return cases;
  }

  /** The body's length in bytes: the fields' line and the file (without a byte-order mark). */
  public long contentLength() {
    return header.length + fileBytes - bomBytes;
  }

  /** The dataset's line of a body line (line 1 is the run's fields), or 0 for line 1 or none. */
  public static long datasetLine(long bodyLine) {
    return bodyLine > 1 ? bodyLine - 1 : 0;
  }

  /**
   * A fresh body for one attempt: the fields' line, then the file streamed from disk; it fails before its
   * last byte if the file's bytes are no longer those checked.
   */
  public HttpRequest.BodyPublisher body() {
    return HttpRequest.BodyPublishers.fromPublisher(HttpRequest.BodyPublishers.ofInputStream(this::open), contentLength());
  }

  /** The body as a stream (what {@link #body()} sends). */
  InputStream open() {
    try {
      InputStream data = new Verified(Files.newInputStream(file), newSha256(), sha256, fileBytes, file);
      data.skipNBytes(bomBytes); // digested by Verified on the way, as in the check
      return new SequenceInputStream(new ByteArrayInputStream(header), data);
    } catch (IOException e) {
      return new FailingStream(new ApiClient.BodyFailure("cannot read " + file + ": " + e.getMessage()));
    }
  }

  private static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }

  /**
   * The file's bytes, digested as they pass; its last byte is handed out only once the whole file is
   * digested and found to be the one checked, so a changed file never makes a whole request.
   */
  private static final class Verified extends InputStream {
    private final InputStream in;
    private final MessageDigest sha;
    private final String expected;
    private final Path file;
    private long remaining;
    private boolean done;

    Verified(InputStream in, MessageDigest sha, String expected, long size, Path file) {
      this.in = new BufferedInputStream(in, 1 << 16);
      this.sha = sha;
      this.expected = expected;
      this.remaining = size;
      this.file = file;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int n = read(one, 0, 1);
      return n < 0 ? -1 : one[0] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (done) {
        return -1;
      }
      if (remaining > 1) {
        int n = in.read(b, off, (int) Math.min(len, remaining - 1));
        if (n < 0) {
          throw changed(); // shorter than it was
        }
        sha.update(b, off, n);
        remaining -= n;
        return n;
      }
      byte[] rest = in.readNBytes(2); // the last byte, and proof that nothing follows it
      if (rest.length != remaining) {
        throw changed();
      }
      sha.update(rest);
      if (!HexFormat.of().formatHex(sha.digest()).equals(expected)) {
        throw changed();
      }
      done = true;
      if (rest.length == 0) {
        return -1;
      }
      b[off] = rest[0];
      return 1;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }

    private ApiClient.BodyFailure changed() {
      return new ApiClient.BodyFailure(file + " changed while it was being sent (its content is not what was checked);"
          + " the server got no whole request, so no run was made from it: submit it again");
    }
  }

  /** A stream that fails at once: how a body that cannot be read says so through the HTTP client. */
  private static final class FailingStream extends InputStream {
    private final IOException failure;

    FailingStream(IOException failure) {
      this.failure = failure;
    }

    @Override
    public int read() throws IOException {
      throw failure;
    }
  }
}
