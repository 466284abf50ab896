package dev.tally.coordinator.security;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A certificate, key or trust file that cannot be used: missing, unreadable, not PEM, a key that does not
 * belong to its certificate, a certificate out of its validity period. The message names the file and
 * says what is wrong (and, where there is one, the command that fixes it); it never holds key material.
 */
public final class TlsFileException extends Exception {
  private final Path file;

  /**
   * @param file the file at fault
   * @param message what is wrong with it, naming it
   */
  public TlsFileException(Path file, String message) {
    super(message);
    this.file = Objects.requireNonNull(file, "file");
  }

  /** The file at fault. */
  public Path file() {
    return file;
  }
}
