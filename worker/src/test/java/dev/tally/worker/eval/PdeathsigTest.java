package dev.tally.worker.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * "A worker that dies leaves no case process behind": the mechanisms the exec evaluator relies on, shown
 * with a real parent killed by SIGKILL. A shell stands in for the worker JVM: the kernel treats both the
 * same ({@code --pdeathsig} watches the forking thread; bash has one).
 *
 * <p>The case is {@code sh -c 'sleep 300 & echo $!; wait'}: the worker's grandchild (great-grandchild
 * under the supervisor) is the {@code sleep}, whose pid the case prints.
 */
class PdeathsigTest {
  private static final List<String> CASE = List.of("/bin/sh", "-c", "sleep 300 & echo $!; wait");

  /** What ExecEvaluator starts today: the supervisor kills the case's whole process group. */
  @Test
  void aCaseAndItsChildrenDieWhenTheWorkerIsKilled() throws Exception {
    assumeThat(ExecEvaluator.USE_SUPERVISOR).isTrue();
    long grandchild = startParentAndKillIt(ExecEvaluator.launchCommand(CASE));

    await().atMost(Duration.ofSeconds(5)).until(() -> Processes.gone(grandchild));
  }

  /**
   * The control, and the fallback without setsid: {@code setpriv --pdeathsig KILL} alone kills the case's
   * process ({@code sh}) but its child is re-parented to init and goes on, so the test above can fail.
   */
  @Test
  void underPdeathsigAloneTheCasesChildOutlivesTheWorker() throws Exception {
    assumeThat(Path.of("/usr/bin/setpriv")).isExecutable();
    List<String> bare = new ArrayList<>(List.of("/usr/bin/setpriv", "--pdeathsig", "KILL", "--"));
    bare.addAll(CASE);
    long grandchild = startParentAndKillIt(bare);
    try {
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !Processes.gone(grandchild));
    } finally {
      ProcessHandle.of(grandchild).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  /**
   * Starts {@code bash} running {@code caseCommand} in the background, waits for the case's {@code sleep}
   * to run, kills bash with SIGKILL; returns the {@code sleep}'s pid.
   */
  private static long startParentAndKillIt(List<String> caseCommand) throws Exception {
    List<String> parentCommand = new ArrayList<>(List.of("bash", "-c", "\"$@\" & wait", "worker"));
    parentCommand.addAll(caseCommand);
    Process parent = new ProcessBuilder(parentCommand).start();
    long sleeper;
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8))) {
      sleeper = Long.parseLong(out.readLine().trim());
      await().atMost(Duration.ofSeconds(5))
          .until(() -> ProcessHandle.of(sleeper).flatMap(h -> h.info().command()).map(c -> c.endsWith("sleep")).orElse(false));
      assertThat(Processes.gone(sleeper)).isFalse();

      parent.destroyForcibly(); // SIGKILL: no chance to clean up
      assertThat(parent.waitFor(5, TimeUnit.SECONDS)).isTrue();
    } finally {
      parent.destroyForcibly();
    }
    return sleeper;
  }
}
