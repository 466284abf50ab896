package dev.tally.cli;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Run in a JVM of its own by {@link LogConfigurationTest}: logs through SLF4J as a {@code tally} JVM does, with
 * whatever configuration logback finds: a warning, an information, and a warning with the machine's trouble.
 */
public final class LogProbe {
  private LogProbe() {}

  public static void main(String[] args) {
    Logger log = LoggerFactory.getLogger("dev.tally.probe.LogProbe");
    log.warn("probe warning");
    log.info("probe information");
    log.warn("probe trouble", new java.io.UncheckedIOException("cannot write", new java.io.IOException("No space left on device")));
  }
}
