package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.tally.coordinator.security.TestCertificates;
import dev.tally.core.security.Secret;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker token never shows: a real {@code tally run} with a token file and TLS, its local worker, a
 * remote worker with the token (over TLS) and a rogue worker with a wrong one, every process logging at
 * DEBUG. While they run, no process's command line (what {@code ps} shows every user) holds either token;
 * afterwards no log, message, store file, results file or case environment does, the rogue was refused and
 * stopped with exit 3, and the cases saw their {@code TALLY_*} variables but no token.
 */
class SecretsProcessTest {
  private static final String TOKEN = "fleet-token-" + "7d1e0c55a9b24f3e8c61";
  private static final String WRONG_TOKEN = "rogue-token-" + "0b8f4e2d1c3a5e7f9a0b";
  private static final int CASES = 40;

  @TempDir Path dir;

  @Test
  void theTokenIsInNoCommandLineLogMessageStoreFileOrCaseEnvironment() throws Exception {
    int port = Ports.freeFixedLoopbackPort();
    Path tokenFile = Files.writeString(dir.resolve("worker.token"), TOKEN + "\n");
    Files.setPosixFilePermissions(tokenFile, PosixFilePermissions.fromString("rw-------"));
    TestCertificates.Authority ca = TestCertificates.authority("Tally Test CA");
    TestCertificates.Issued server = ca.issue("coordinator", List.of("localhost"), List.of("127.0.0.1"));
    Path cert = server.writeChain(dir.resolve("cert.pem"));
    Path key = server.writeKey(dir.resolve("key.pem"));
    Path caFile = ca.writeCertificate(dir.resolve("ca.pem"));
    Path cases = dir.resolve("cases.jsonl");
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < CASES; i++) {
      lines.add("{\"id\":\"c" + i + "\"}");
    }
    Files.write(cases, lines);
    Path remoteDir = Files.createDirectories(dir.resolve("remote"));
    Path rogueDir = Files.createDirectories(dir.resolve("rogue"));

    Map<String, String> debug = new HashMap<>();
    debug.put("TALLY_LOG_LEVEL", "DEBUG"); // every line Tally can log, not only warnings
    debug.put(Secret.WORKER_TOKEN_VARIABLE, null);
    Map<String, String> rogueEnvironment = new HashMap<>(debug);
    rogueEnvironment.put(Secret.WORKER_TOKEN_VARIABLE, WRONG_TOKEN);

    // Each case writes its environment to a file beside it, then takes a moment, so the remote worker
    // that backs off while nobody listens still gets some.
    String cmd = "sh -c 'env > \"$0\"; sleep 0.4' env-{id}.txt";
    try (TallyProcess remote = TallyProcess.start(remoteDir, "remote.log", List.of("worker", "--coordinator=127.0.0.1:" + port,
            "--slots=2", "--name=remote-1", "--token-file=" + tokenFile, "--tls-ca=" + caFile), debug);
        TallyProcess run = TallyProcess.start(dir, "run.log", List.of("run", cases.toString(), "--listen=127.0.0.1:" + port,
            "--workers=1", "--slots=2", "--worker-token-file=" + tokenFile, "--tls-cert=" + cert, "--tls-key=" + key,
            "--evaluator=exec", "--cmd=" + cmd, "--no-progress"), debug);
        TallyProcess rogue = TallyProcess.start(rogueDir, "rogue.log", List.of("worker", "--coordinator=127.0.0.1:" + port,
            "--slots=1", "--name=rogue", "--tls-ca=" + caFile), rogueEnvironment)) {

      // While they all run: no command line holds a token, whatever ps would show.
      await().atMost(Duration.ofSeconds(60)).until(() -> run.worker("local-1").isPresent());
      List<Long> pids = new ArrayList<>(List.of(run.process.pid(), remote.process.pid(), rogue.process.pid()));
      run.process.descendants().forEach(h -> pids.add(h.pid()));
      for (long pid : pids) {
        assertThat(String.join(" ", TallyProcess.commandLine(pid))).as("/proc/%d/cmdline", pid)
            .doesNotContain(TOKEN).doesNotContain(WRONG_TOKEN);
      }
      String ps = new String(new ProcessBuilder("ps", "-eww", "-o", "pid,args").start().getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(ps).contains("--worker-token-file=" + tokenFile).doesNotContain(TOKEN).doesNotContain(WRONG_TOKEN);
      // ... nor an environment a case could read by walking up to its worker (/proc/PID/environ of the
      // same user): the local worker got the token on its stdin.
      for (long pid : pids) {
        Path environ = Path.of("/proc", Long.toString(pid), "environ");
        if (Files.isReadable(environ)) {
          String text;
          try {
            text = new String(Files.readAllBytes(environ), StandardCharsets.UTF_8);
          } catch (java.io.IOException gone) {
            continue; // the process ended meanwhile
          }
          assertThat(text).as("/proc/%d/environ", pid).doesNotContain(TOKEN);
        }
      }

      assertThat(rogue.waitFor(60)).as("the rogue stops at once, with the refused code; its output:%n%s", rogue.output())
          .isEqualTo(3);
      assertThat(rogue.output()).contains("refused this worker: Hello refused: wrong worker token", "stopped (exit 3)");
      assertThat(run.waitFor(180)).as("run output:%n%s", run.output()).isZero();
      await().atMost(Duration.ofSeconds(30)).until(() -> remote.output().contains("tally worker: joined"));
      assertThat(run.output()).contains("refused a worker at /127.0.0.1:", "wrong worker token");
    }

    // Afterwards: every file the processes wrote (logs, store, results, summary, the cases' environments).
    List<Path> written;
    try (Stream<Path> all = Files.walk(dir)) {
      written = all.filter(Files::isRegularFile).filter(f -> !f.equals(tokenFile)).toList();
    }
    assertThat(written).anyMatch(f -> f.getFileName().toString().equals("tally.db"))
        .anyMatch(f -> f.getFileName().toString().equals("worker-1.log"))
        .anyMatch(f -> f.getFileName().toString().equals("remote.log"));
    for (Path f : written) {
      String bytes = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
      assertThat(bytes).as("%s", f).doesNotContain(TOKEN).doesNotContain(WRONG_TOKEN);
    }
    List<Path> environments = written.stream().filter(f -> f.getFileName().toString().startsWith("env-")).toList();
    assertThat(environments).as("one environment per case").hasSize(CASES);
    assertThat(environments).as("the remote worker ran some cases").anyMatch(f -> f.startsWith(remoteDir));
    for (Path f : environments) {
      assertThat(Files.readString(f)).contains("TALLY_IDEMPOTENCY_KEY=tally-", "TALLY_ATTEMPT=", "TALLY_FENCING_TOKEN=")
          .doesNotContain(Secret.WORKER_TOKEN_VARIABLE);
    }
  }
}
