package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How a {@code tally} JVM logs ({@link LogConfiguration}), seen from a JVM of its own ({@link LogProbe}). */
class LogConfigurationTest {
  @TempDir Path dir;

  /**
   * Runs {@link LogProbe} with {@code jvmOptions} and {@code environment}; its stderr. Its stdout, which carries
   * tally's tables and the run ids scripts read, must stay empty whatever the logging.
   */
  private String probe(List<String> jvmOptions, Map<String, String> environment) throws Exception {
    List<String> command = LocalWorkerProcesses.javaCommand(jvmOptions, LogProbe.class.getName());
    Path out = Files.createTempFile(dir, "stdout", ".txt");
    ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile());
    pb.environment().remove(LogConfiguration.LEVEL_VARIABLE);
    pb.environment().putAll(environment);
    Process p = pb.start();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(err).isZero();
    assertThat(Files.readString(out)).as("stdout").isEmpty();
    return err;
  }

  @Test
  void warningsGoToStderrOneLineEachWithTheMachinesTroubleAsOneLineOfCauses() throws Exception {
    String err = probe(List.of(), Map.of());
    assertThat(err.lines().toList()).satisfiesExactly(
        line -> assertThat(line).matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  \\[main\\] LogProbe - probe warning"),
        line -> assertThat(line).endsWith("WARN  [main] LogProbe - probe trouble"),
        line -> assertThat(line).isEqualTo(
            "    UncheckedIOException: cannot write; caused by IOException: No space left on device"));
  }

  @Test
  void tallyLogLevelRaisesTallysOwnLoggers() throws Exception {
    assertThat(probe(List.of(), Map.of(LogConfiguration.LEVEL_VARIABLE, "info"))).contains("INFO  [main] LogProbe - probe information");
    assertThat(LogConfiguration.tallyLevel(" Debug ")).isEqualTo(Level.DEBUG);
    assertThat(LogConfiguration.tallyLevel("loud")).as("a name logback does not know").isEqualTo(Level.WARN);
    assertThat(LogConfiguration.tallyLevel(null)).isEqualTo(Level.WARN);
  }

  @Test
  void aConfigurationFileNamedOnTheCommandLineIsReadInstead() throws Exception {
    Path file = dir.resolve("mine.xml");
    Files.writeString(file, "<configuration><appender name=\"E\" class=\"ch.qos.logback.core.ConsoleAppender\">"
        + "<target>System.err</target><encoder><pattern>MINE %level %msg%n</pattern></encoder></appender>"
        + "<root level=\"INFO\"><appender-ref ref=\"E\"/></root></configuration>");
    String err = probe(List.of("-Dlogback.configurationFile=" + file), Map.of());
    assertThat(err).contains("MINE WARN probe warning").contains("MINE INFO probe information");
  }

  @Test
  void aConfigurationFileThatIsNotThereIsSaidAndTallysOwnLoggingStays() throws Exception {
    Path missing = dir.resolve("typo.xml");
    for (String named : List.of(missing.toString(), "")) {
      String err = probe(List.of("-Dlogback.configurationFile=" + named), Map.of());
      assertThat(err.lines().toList()).as(named).hasSize(4)
          .anySatisfy(line -> assertThat(line).contains("WARN").contains("-Dlogback.configurationFile=" + named)
              .contains("no such file"))
          .anySatisfy(line -> assertThat(line).endsWith("WARN  [main] LogProbe - probe warning"))
          .noneSatisfy(line -> assertThat(line).contains("probe information"));
    }
  }
}
