package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * "A worker that dies leaves no case process behind": the mechanism the exec evaluator relies on
 * ({@code setpriv --pdeathsig KILL}), shown with a real parent killed by SIGKILL. A shell stands in for the
 * worker JVM: the kernel treats both the same.
 */
class PdeathsigTest {

  @Test
  void aCaseStartedUnderSetprivDiesWhenItsParentIsKilled() throws Exception {
    assumeThat(Path.of("/usr/bin/setpriv")).isExecutable();
    long child = startParentAndKillIt("setpriv --pdeathsig KILL -- sleep 300");

    await().atMost(Duration.ofSeconds(5)).until(() -> Processes.gone(child));
  }

  /** The control: without setpriv the same child outlives its parent, so the test above can fail. */
  @Test
  void withoutSetprivTheChildOutlivesItsParent() throws Exception {
    long child = startParentAndKillIt("sleep 300");
    try {
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !Processes.gone(child));
    } finally {
      ProcessHandle.of(child).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  /** Starts {@code bash} running {@code childCommand} in the background, kills bash with SIGKILL. */
  private static long startParentAndKillIt(String childCommand) throws Exception {
    Process parent = new ProcessBuilder("bash", "-c", childCommand + " & echo $!; wait").start();
    long child;
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8))) {
      child = Long.parseLong(out.readLine().trim());
      // The child runs (past setpriv's exec into sleep) before its parent dies.
      await().atMost(Duration.ofSeconds(5))
          .until(() -> ProcessHandle.of(child).flatMap(h -> h.info().command()).map(c -> c.endsWith("sleep")).orElse(false));
      assertThat(Processes.gone(child)).isFalse();

      parent.destroyForcibly(); // SIGKILL: no chance to clean up
      assertThat(parent.waitFor(5, TimeUnit.SECONDS)).isTrue();
    }
    return child;
  }
}
