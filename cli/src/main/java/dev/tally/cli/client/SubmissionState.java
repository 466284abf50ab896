package dev.tally.cli.client;

import dev.tally.coordinator.report.AtomicFile;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Where {@code tally submit} keeps a submission's idempotency key while the server has not confirmed it, so
 * that every retry of the submission sends the same key: the retries of one invocation, and a second
 * invocation with the same arguments after the first was killed, which finds the pending key and gets the
 * first run back instead of making a second.
 *
 * <h2>The state file</h2>
 *
 * <p>One small JSON file per pending submission, in {@code $TALLY_STATE_DIR} if set, else {@code
 * $XDG_STATE_HOME/tally/submissions}, else {@code ~/.local/state/tally/submissions} (the XDG base directory
 * specification's place for state that outlives a process but is not worth backing up); {@code tally submit
 * --state-dir DIR} overrides all three. Its name is a SHA-256 digest of what makes two invocations the same
 * submission ({@link Identity}): the server's URL, the dataset's real path and a digest of its content, and
 * the run's fields as sent (name, evaluator, settings). It holds the key, when the submission started, and
 * that identity in words, for a person who finds it:
 *
 * <pre>
 * {"version":1,"key":"5f0c...","startedAt":"2026-12-01T10:00:00Z","server":"http://127.0.0.1:8080",
 *  "dataset":"/home/me/cases.jsonl","datasetSha256":"9a1b...","submission":{"evaluator":{"kind":"noop"}}}
 * </pre>
 *
 * <p><b>Lifecycle.</b> The file is written, fsynced and renamed into place (then its directory fsynced)
 * before the first request is sent, so a submission killed at any point after that has its key on disk. It
 * is deleted once the server has answered finally: a {@code 201} or a replay (the run exists), or a refusal
 * that created nothing (a bad line, a wrong token). It stays while the outcome is unknown: the process was
 * killed, or gave up retrying; the next invocation with the same arguments then reuses the key. A second
 * submission of the same dataset after a confirmed one therefore makes a new key, and a new run, as it
 * should.
 *
 * <p><b>Concurrent invocations</b> with the same arguments share one key: reading or creating the file
 * happens under an exclusive lock on {@code .lock} in the directory, so the second finds the first's key.
 * The server then makes one run: one of them gets it, the other a {@code 409} while it is being made and
 * the replay after. Deleting is under the lock too, and only deletes a file that still holds this
 * invocation's key.
 *
 * <p>Thread-safety: safe from any thread and process (the file lock, and a lock within this JVM since a
 * JVM cannot hold two locks on one file).
 */
public final class SubmissionState {
  /** The environment variable naming the directory of state files. */
  public static final String DIRECTORY_VARIABLE = "TALLY_STATE_DIR";

  /** The format of a state file; a file of another version is refused rather than misread. */
  static final int VERSION = 1;

  private static final String LOCK_FILE = ".lock";
  private static final ObjectMapper JSON = new ObjectMapper();
  /** One holder of the file lock per JVM at a time: {@link FileChannel#lock} throws for a second one. */
  private static final ReentrantLock IN_PROCESS = new ReentrantLock();

  private final Path directory;

  /**
   * What makes two invocations the same submission.
   *
   * @param server the server's base URL
   * @param dataset the dataset's real path
   * @param datasetSha256 a SHA-256 digest (hex) of the dataset's bytes
   * @param submission the run's fields as sent (the first line of the body: name, evaluator, settings)
   */
  public record Identity(String server, String dataset, String datasetSha256, String submission) {
    public Identity {
      Objects.requireNonNull(server, "server");
      Objects.requireNonNull(dataset, "dataset");
      Objects.requireNonNull(datasetSha256, "datasetSha256");
      Objects.requireNonNull(submission, "submission");
    }

    /** A SHA-256 digest (hex) of the four parts, each length-prefixed so that no two identities collide. */
    String digest() {
      MessageDigest sha;
      try {
        sha = MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("every Java platform has SHA-256", e);
      }
      for (String part : new String[] {server, dataset, datasetSha256, submission}) {
        byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
        sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        sha.update(bytes);
      }
      return HexFormat.of().formatHex(sha.digest());
    }
  }

  /**
   * A submission's key, as kept.
   *
   * @param key the idempotency key
   * @param file the state file that holds it
   * @param startedAt when the submission started (when the key was made)
   * @param resumed whether the key was found (an earlier invocation made it) rather than made now
   */
  public record Pending(String key, Path file, Instant startedAt, boolean resumed) {}

  /** State files in {@code directory} (created, owner-only, when the first is written). */
  public SubmissionState(Path directory) {
    this.directory = Objects.requireNonNull(directory, "directory");
  }

  /** The directory the state files are in. */
  public Path directory() {
    return directory;
  }

  /**
   * The default directory: {@code $TALLY_STATE_DIR}, else {@code $XDG_STATE_HOME/tally/submissions}, else
   * {@code HOME/.local/state/tally/submissions}.
   *
   * @param environment the process's environment
   * @param home the user's home directory ({@code user.home})
   */
  public static Path defaultDirectory(Map<String, String> environment, Path home) {
    String own = environment.get(DIRECTORY_VARIABLE);
    if (own != null && !own.isBlank()) {
      return Path.of(own);
    }
    String xdg = environment.get("XDG_STATE_HOME");
    // The XDG specification: a relative path there is invalid and is to be ignored.
    Path base = xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute() ? Path.of(xdg) : home.resolve(".local").resolve("state");
    return base.resolve("tally").resolve("submissions");
  }

  /** A new key: a random UUID, 36 printable ASCII characters, as the draft's examples use. */
  public static String newKey() {
    return UUID.randomUUID().toString();
  }

  /**
   * The pending key of this submission if an earlier invocation left one, else a new key from {@code
   * newKey}, written down (fsynced) before this returns.
   *
   * @throws IOException if the directory or the file cannot be written or read; or a file is there that is
   *     not a state file of this version (the message names it)
   */
  public Pending begin(Identity identity, Supplier<String> newKey, Clock clock) throws IOException {
    Path file = fileOf(identity);
    return locked(() -> {
      if (Files.exists(file)) {
        return read(file, identity);
      }
      String key = newKey.get();
      Instant now = clock.instant();
      ObjectNode state = JSON.createObjectNode();
      state.put("version", VERSION);
      state.put("key", key);
      state.put("startedAt", now.toString());
      state.put("server", identity.server());
      state.put("dataset", identity.dataset());
      state.put("datasetSha256", identity.datasetSha256());
      state.set("submission", JSON.readTree(identity.submission()));
      writeDurably(file, JSON.writeValueAsBytes(state));
      return new Pending(key, file, now, false);
    });
  }

  /**
   * Forgets a submission's key once the server has answered finally: deletes its file if it still holds
   * this key (a concurrent invocation may have finished and a later one begun since). Does nothing if the
   * file is gone.
   *
   * @throws IOException if the file cannot be read or deleted
   */
  public void forget(Pending pending) throws IOException {
    locked(() -> {
      if (!Files.exists(pending.file())) {
        return null;
      }
      JsonNode state;
      try {
        state = JSON.readTree(Files.readAllBytes(pending.file()));
      } catch (NoSuchFileException gone) {
        return null;
      } catch (IOException unreadable) {
        return null; // not ours to judge: begin() says what is wrong with it
      }
      if (state != null && pending.key().equals(state.path("key").asText(null))) {
        Files.deleteIfExists(pending.file());
        AtomicFile.forceDirectory(directory);
      }
      return null;
    });
  }

  /** The state file of a submission. */
  Path fileOf(Identity identity) {
    return directory.resolve(identity.digest() + ".json");
  }

  private Pending read(Path file, Identity identity) throws IOException {
    JsonNode state;
    try {
      state = JSON.readTree(Files.readAllBytes(file));
    } catch (IOException e) {
      throw new IOException("the state file " + file + " cannot be read (" + e.getMessage() + "); it holds the key of an"
          + " unfinished submission of these arguments: fix or delete it (deleting it may make a second run, if the first"
          + " request reached the server)", e);
    }
    String key = state == null ? null : state.path("key").asText(null);
    if (state == null || state.path("version").asInt() != VERSION || key == null || key.isEmpty()) {
      throw new IOException("the state file " + file + " is not a tally submit state file of version " + VERSION
          + "; delete it to start a new submission");
    }
    if (!identity.server().equals(state.path("server").asText()) || !identity.dataset().equals(state.path("dataset").asText())
        || !identity.datasetSha256().equals(state.path("datasetSha256").asText())) {
      throw new IOException("the state file " + file + " belongs to another submission than its name says; delete it");
    }
    Instant startedAt;
    try {
      startedAt = Instant.parse(state.path("startedAt").asText());
    } catch (java.time.format.DateTimeParseException e) {
      startedAt = Files.getLastModifiedTime(file).toInstant();
    }
    return new Pending(key, file, startedAt, true);
  }

  /** Writes a file so that after this returns it is on disk whole, or not there at all. */
  private void writeDurably(Path file, byte[] bytes) throws IOException {
    AtomicFile.write(file, bytes);
  }


  private interface Locked<T> {
    T run() throws IOException;
  }

  private <T> T locked(Locked<T> action) throws IOException {
    createDirectory();
    IN_PROCESS.lock();
    try (FileChannel ch = FileChannel.open(directory.resolve(LOCK_FILE), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = ch.lock()) {
      return action.run();
    } finally {
      IN_PROCESS.unlock();
    }
  }

  private void createDirectory() throws IOException {
    if (Files.isDirectory(directory)) {
      return;
    }
    try {
      Files.createDirectories(directory, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    } catch (UnsupportedOperationException e) {
      Files.createDirectories(directory);
    } catch (FileAlreadyExistsException e) {
      throw new IOException("the state directory " + directory + " is a file, not a directory", e);
    }
  }
}
