package dev.tally.coordinator.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.tally.core.security.Secret;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

class SecretsTest {
  private static final String TOKEN = "0123456789abcdef0123456789abcdef";

  @TempDir Path dir;

  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private final Logger logger = (Logger) LoggerFactory.getLogger(Secrets.class);

  @BeforeEach
  void attach() {
    logs.start();
    logger.addAppender(logs);
  }

  @AfterEach
  void detach() {
    logger.detachAppender(logs);
  }

  private Path file(String content, String mode) throws IOException {
    Path f = Files.write(dir.resolve("token"), content.getBytes(StandardCharsets.UTF_8));
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
    return f;
  }

  @Test
  void aFileWinsOverTheEnvironment() throws IOException {
    Path f = file(TOKEN + "\n", "rw-------");
    Secret s = Secrets.workerToken(f, Map.of(Secret.WORKER_TOKEN_VARIABLE, "from-the-environment")).orElseThrow();
    assertThat(s.matches(TOKEN)).isTrue();
    assertThat(s.toString()).isEqualTo("worker token from " + f);
  }

  @Test
  void theEnvironmentIsReadWithoutAFileAndNothingWithoutEither() {
    Secret s = Secrets.workerToken(null, Map.of(Secret.WORKER_TOKEN_VARIABLE, TOKEN + "\n")).orElseThrow();
    assertThat(s.matches(TOKEN)).isTrue();
    assertThat(s.toString()).isEqualTo("worker token from $TALLY_WORKER_TOKEN");
    assertThat(Secrets.workerToken(null, Map.of())).isEmpty();
    assertThat(Secrets.workerToken(null, Map.of(Secret.API_TOKEN_VARIABLE, TOKEN))).isEmpty();
    assertThat(Secrets.apiToken(null, Map.of(Secret.API_TOKEN_VARIABLE, TOKEN)).orElseThrow().matches(TOKEN)).isTrue();
  }

  @Test
  void onlyTrailingLineBreaksAreDropped() throws IOException {
    assertThat(Secrets.workerToken(file(TOKEN + "\r\n\n", "rw-------"), Map.of()).orElseThrow().matches(TOKEN)).isTrue();
    assertThat(Secrets.workerToken(file(TOKEN, "rw-------"), Map.of()).orElseThrow().matches(TOKEN)).isTrue();
    assertThatThrownBy(() -> Secrets.workerToken(file(" " + TOKEN + "\n", "rw-------"), Map.of()))
        .hasMessageContaining("has a space at position 1").hasMessageNotContaining(TOKEN);
    assertThatThrownBy(() -> Secrets.workerToken(file(TOKEN + "\nsecond line\n", "rw-------"), Map.of()))
        .hasMessageContaining("a line break at position 33").hasMessageNotContaining(TOKEN).hasMessageNotContaining("second");
  }

  @Test
  void aMissingEmptyUnreadableOrOversizedFileIsRefusedNamingIt() throws IOException {
    Path missing = dir.resolve("nope");
    assertThatThrownBy(() -> Secrets.workerToken(missing, Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("worker token file " + missing + " does not exist");
    Path empty = file("\n", "rw-------");
    assertThatThrownBy(() -> Secrets.workerToken(empty, Map.of())).hasMessage("worker token file " + empty + " is empty");
    assertThatThrownBy(() -> Secrets.workerToken(dir, Map.of())).hasMessage("worker token file " + dir + " is a directory");
    Path huge = Files.writeString(dir.resolve("huge"), "a".repeat(Secrets.MAX_FILE_BYTES + 1));
    assertThatThrownBy(() -> Secrets.apiToken(huge, Map.of())).hasMessageContaining("API token file " + huge + " is larger");
    Path binary = Files.write(dir.resolve("binary"), new byte[] {(byte) 0xff, (byte) 0xfe, 0});
    assertThatThrownBy(() -> Secrets.workerToken(binary, Map.of())).hasMessageContaining("is not text");
  }

  @Test
  void anUnreadableFileIsRefusedNamingIt() throws IOException {
    assumeThat(System.getProperty("user.name")).as("root reads every file").isNotEqualTo("root");
    Path locked = file(TOKEN, "---------");
    assertThatThrownBy(() -> Secrets.workerToken(locked, Map.of()))
        .hasMessage("cannot read the worker token file " + locked + ": permission denied");
  }

  @Test
  void anEmptyVariableIsRefusedRatherThanTakenAsNoToken() {
    assertThatThrownBy(() -> Secrets.workerToken(null, Map.of(Secret.WORKER_TOKEN_VARIABLE, "")))
        .hasMessageContaining("TALLY_WORKER_TOKEN is set but empty");
    assertThatThrownBy(() -> Secrets.workerToken(null, Map.of(Secret.WORKER_TOKEN_VARIABLE, "\n")))
        .hasMessageContaining("TALLY_WORKER_TOKEN is set but empty");
  }

  @Test
  void aFileOthersCanReadIsAcceptedWithAWarning() throws IOException {
    Path f = file(TOKEN, "rw-r--r--");
    assertThat(Secrets.workerToken(f, Map.of())).isPresent();
    assertThat(logs.list).singleElement().satisfies(e -> {
      assertThat(e.getFormattedMessage()).contains("can be read by every user of this machine", "chmod 600 " + f)
          .doesNotContain(TOKEN);
    });
    logs.list.clear();
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
    assertThat(Secrets.workerToken(f, Map.of())).isPresent();
    assertThat(logs.list).isEmpty();
  }
}
