package dev.tally.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.datasets.DatasetReader;
import dev.tally.datasets.ReadOptions;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * A dataset file, checked whole for {@code tally run} before anything is opened (which needs its digest
 * before it picks the run), and then read again, a case at a time, into the store. How a file of each format
 * becomes cases, and what is refused, is the {@code datasets} module's ({@link DatasetReader}, which keeps
 * {@link CaseLines}' grammar); this class adds only what a dataset file must also be: readable, with at least
 * one case, with no repeated id, and (for an evaluator whose template names fields) with those fields.
 *
 * <p><b>Memory.</b> No read holds the cases: the check streams the file once, keeping 8 bytes per case (a
 * 64-bit hash of its id, so that repeated ids are found before the store is opened) and the digest; only
 * ids whose hashes collide are read a second time and compared as text. So a dataset of a million cases is
 * checked and submitted in a few megabytes ({@code tally run}'s coordinator runs a million cases at
 * {@code -Xmx512m}).
 *
 * <p>Reading is all or nothing: the first bad line stops the check with a {@link DatasetException} naming the
 * file and line, before anything is submitted. A file that changes between the check and the submission is
 * refused when the submission's read ends ({@link #open}), and the store then writes nothing.
 *
 * <p>Thread-safety: immutable; each {@link #open} is a read of its own, for one thread.
 */
public final class Dataset {
  /** The longest case line: {@link CaseLines#MAX_LINE_BYTES}. */
  public static final int MAX_LINE_BYTES = CaseLines.MAX_LINE_BYTES;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path file;
  private final ReadOptions options;
  private final long count;
  private final String digest;

  private Dataset(Path file, ReadOptions options, long count, String digest) {
    this.file = file;
    this.options = options;
    this.count = count;
    this.digest = digest;
  }

  /**
   * Checks a dataset in a format detected from it, every case once.
   *
   * @see #read(Path, ReadOptions, Function, String)
   */
  public static Dataset read(Path file) throws DatasetException {
    return read(file, ReadOptions.DEFAULT, null, null);
  }

  /**
   * Checks a dataset with no field required.
   *
   * @see #read(Path, ReadOptions, Function, String)
   */
  public static Dataset read(Path file, ReadOptions options) throws DatasetException {
    return read(file, options, null, null);
  }

  /**
   * Checks a dataset, streaming it: every record by its format's reader, every id against the others, and
   * (when asked) every case for the fields an evaluator's template uses (by the template's own rule).
   *
   * @param file a dataset file in any format {@link DatasetReader} reads
   * @param options its format (or detection), CSV types and the cases to take
   * @param missingField the first field a case lacks, or empty; null to require none
   * @param what the option that needs the fields, for the message (with {@code missingField})
   * @return the checked dataset: its count and digest, and a way to read its cases ({@link #open})
   * @throws DatasetException if the file cannot be read or has no case, if a record is refused by its
   *     format's reader, if an id repeats an earlier one (the second one's line, and the first one's), or
   *     if a case lacks a required field (its line and the field)
   */
  public static Dataset read(Path file, ReadOptions options, Function<JsonNode, Optional<String>> missingField, String what)
      throws DatasetException {
    Objects.requireNonNull(options, "options");
    long[] idHashes = new long[1024];
    int count = 0;
    Digest digest = new Digest();
    try (DatasetReader reader = DatasetReader.open(file, options)) {
      for (CaseRecord c; (c = reader.next()) != null; ) {
        if (missingField != null) {
          JsonNode caseObject = tree(c);
          Optional<String> missing = missingField.apply(caseObject);
          if (missing.isPresent()) {
            throw DatasetException.missingField(file, reader.lineOf(c.position()), c.caseId(), caseObject, missing.get(), what);
          }
        }
        if (count == idHashes.length) {
          idHashes = Arrays.copyOf(idHashes, count * 2);
        }
        idHashes[count++] = idHash(c.caseId());
        digest.add(c);
      }
    } catch (CaseSourceException e) {
      throw new DatasetException(file, e.line(), e.detail());
    } catch (IOException e) {
      throw DatasetException.cannotRead(file, e);
    }
    if (count == 0) {
      throw new DatasetException(file, 0, "dataset has no cases");
    }
    Set<Long> suspects = collidingHashes(idHashes, count);
    if (!suspects.isEmpty()) {
      requireUniqueIds(file, options, suspects);
    }
    return new Dataset(file, options, count, digest.hex());
  }

  /**
   * Finds the first repeated id in file order among the cases whose id hash is one of {@code suspects} (a
   * second read, remembering only those ids), as the old read-it-all check did.
   */
  private static void requireUniqueIds(Path file, ReadOptions options, Set<Long> suspects) throws DatasetException {
    Map<String, Integer> firstPositions = new HashMap<>();
    try (DatasetReader reader = DatasetReader.open(file, options)) {
      for (CaseRecord c; (c = reader.next()) != null; ) {
        if (suspects.contains(idHash(c.caseId()))) {
          Integer first = firstPositions.putIfAbsent(c.caseId(), c.position());
          if (first != null) {
            throw CaseSourceException.duplicateId(reader, c.position(), first, c.caseId());
          }
        }
      }
    } catch (CaseSourceException e) {
      throw new DatasetException(file, e.line(), e.detail());
    } catch (IOException e) {
      throw DatasetException.cannotRead(file, e);
    }
  }

  /** The hashes that occur more than once among the first {@code count}. */
  private static Set<Long> collidingHashes(long[] hashes, int count) {
    long[] sorted = Arrays.copyOf(hashes, count);
    Arrays.sort(sorted);
    Set<Long> repeated = new HashSet<>();
    for (int i = 1; i < count; i++) {
      if (sorted[i] == sorted[i - 1]) {
        repeated.add(sorted[i]);
      }
    }
    return repeated;
  }

  /**
   * A 64-bit hash of an id (FNV-1a over its UTF-16 units, then a finalising mix): among a million distinct
   * ids two share one with a chance of about 3e-8, and a shared hash only costs a second read, never a
   * wrong answer.
   */
  static long idHash(String id) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < id.length(); i++) {
      h ^= id.charAt(i);
      h *= 0x100000001b3L;
    }
    h ^= h >>> 33; // MurmurHash3's fmix64: spreads FNV's weak high bits
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  private static JsonNode tree(CaseRecord c) {
    try {
      return JSON.readTree(c.caseJson());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("case was valid JSON when read", e);
    }
  }

  public Path file() {
    return file;
  }

  /** How many cases the dataset has (after the selection of its read options). */
  public long count() {
    return count;
  }

  /**
   * A SHA-256 digest (hex) of the cases in order, ids and content: equal for two reads of the same
   * cases, different when any case was edited, added, removed or moved.
   */
  public String digest() {
    return digest;
  }

  /**
   * Reads the cases again, one at a time in file order, for a store to insert as they come. At its end the
   * read checks that it saw the cases the check saw (their count and digest), and refuses them if not, so a
   * file edited since the check makes no run.
   *
   * @return a source of the cases; close it
   * @throws CaseSourceException if the file cannot be opened any more
   */
  public Reading open() throws CaseSourceException {
    return new Reading(DatasetReader.open(file, options));
  }

  /**
   * One read of the dataset's cases, checked against the first at its end ({@link #open}).
   *
   * <p>Thread-safety: none; pulled by one thread.
   */
  public final class Reading implements CaseSource, Closeable {
    private final DatasetReader reader;
    private final Digest seen = new Digest();
    private long read;

    private Reading(DatasetReader reader) {
      this.reader = reader;
    }

    /**
     * {@inheritDoc}
     *
     * @throws CaseSourceException also when the file no longer holds the cases it held when it was checked
     */
    @Override
    public CaseRecord next() throws CaseSourceException {
      CaseRecord c = reader.next();
      if (c == null) {
        if (read != count || !seen.hex().equals(digest)) {
          throw new CaseSourceException(reader.name(), 0, "the file changed while it was read; nothing was submitted");
        }
        return null;
      }
      read++;
      seen.add(c);
      return c;
    }

    @Override
    public String name() {
      return reader.name();
    }

    @Override
    public int lineOf(int position) {
      return reader.lineOf(position);
    }

    @Override
    public void close() throws IOException {
      reader.close();
    }
  }

  /** The running SHA-256 of cases in order: each id and content length-prefixed, so no two lists share one. */
  private static final class Digest {
    private final MessageDigest sha;
    private String hex;

    Digest() {
      try {
        sha = MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every Java platform has SHA-256", e);
      }
    }

    void add(CaseRecord c) {
      for (String part : new String[] {c.caseId(), c.caseJson()}) {
        byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
        sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        sha.update(bytes);
      }
    }

    /** The digest of what was added; adds nothing more after. */
    String hex() {
      if (hex == null) {
        hex = HexFormat.of().formatHex(sha.digest());
      }
      return hex;
    }
  }
}
