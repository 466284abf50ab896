package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a local worker's JVM is started with ({@link LocalWorkerProcesses#workerJvmOptions}). */
class LocalWorkerJvmTest {
  @TempDir Path dir;

  @Test
  void workersWhoseCasesAreTheWorkCompileWithC1OnlyAndBenchWorkersKeepC2() {
    assertThat(LocalWorkerProcesses.workerJvmOptions(LocalWorkerProcesses.Jvm.CASES, List.of(), null))
        .contains("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m");
    assertThat(LocalWorkerProcesses.workerJvmOptions(LocalWorkerProcesses.Jvm.THROUGHPUT, List.of(), null))
        .contains("-XX:+UseSerialGC").noneMatch(o -> o.startsWith("-XX:TieredStopAtLevel"));
    assertThat(LocalWorkerProcesses.Jvm.CASES.options()).contains("-XX:Tier3InvocationThreshold=1000");
  }

  @Test
  void thisJavaAcceptsEveryTuning() throws Exception {
    for (LocalWorkerProcesses.Jvm jvm : LocalWorkerProcesses.Jvm.values()) {
      List<String> command = LocalWorkerProcesses.javaCommand(jvm.options(), "-version"); // in the main class's place
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      assertThat(p.waitFor()).as(jvm + ": " + out).isZero();
    }
  }

  @Test
  void aWorkerMapsTheClassDataArchiveOfTheRunAndInheritsNoOtherOptionOfIt() {
    List<String> parent = List.of("-Xmx2g", "-XX:SharedArchiveFile=/opt/tally/tally-launch.jsa", "-Xshare:auto",
        "-Xlog:cds=off", "-Xlog:cds+dynamic=off", "-agentlib:jdwp=transport=dt_socket", "-Dx=y");

    List<String> options = LocalWorkerProcesses.workerJvmOptions(LocalWorkerProcesses.Jvm.CASES, parent, "");

    assertThat(options).contains("-XX:SharedArchiveFile=/opt/tally/tally-launch.jsa", "-Xshare:auto", "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off");
    // A debugger's port or the run's heap would clash or be wrong in every worker.
    assertThat(options).doesNotContain("-Xmx2g", "-agentlib:jdwp=transport=dt_socket", "-Dx=y");
  }

  @Test
  void theVariablesOptionsComeLastSoTheyWin() {
    List<String> options = LocalWorkerProcesses.workerJvmOptions(LocalWorkerProcesses.Jvm.CASES, List.of(),
        "  -Xmx1g\t-XX:TieredStopAtLevel=4 ");

    assertThat(options.subList(options.size() - 2, options.size())).containsExactly("-Xmx1g", "-XX:TieredStopAtLevel=4");
  }

  @Test
  void aWordOfTheVariableThatIsNoOptionIsRefusedNamingTheVariable() {
    assertThatThrownBy(() -> LocalWorkerProcesses.workerJvmOptions(LocalWorkerProcesses.Jvm.CASES, List.of(), "-Xmx1g 1g"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("$" + LocalWorkerProcesses.WORKER_JAVA_OPTS_VARIABLE)
        .hasMessageContaining("'1g'");
  }

  /**
   * The archive is the launcher's, made beside the jar it was made for; a worker started after the jar was
   * replaced, or by another JDK, must start all the same, and say nothing about it in its log.
   */
  @Test
  void aWorkerJvmStartsQuietlyWhenTheArchiveItIsGivenCannotBeUsed() throws Exception {
    Path notAnArchive = Files.writeString(dir.resolve("stale.jsa"), "not a CDS archive");
    List<String> parent = List.of("-XX:SharedArchiveFile=" + notAnArchive, "-Xshare:auto", "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off");
    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(LocalWorkerProcesses.workerJvmOptions(LocalWorkerProcesses.Jvm.CASES, parent, null));
    command.add("-version");

    Process java = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(java.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

    assertThat(java.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(java.exitValue()).as(output).isZero();
    assertThat(output).doesNotContainIgnoringCase("cds").doesNotContainIgnoringCase("shared archive");
  }

  @Test
  void optionsAJvmRefusesAreRefusedBeforeAnyWorkerStartsWithWhatTheJvmSaid() {
    assertThatThrownBy(() -> LocalWorkerProcesses.checkWorkerJavaOptions(LocalWorkerProcesses.Jvm.CASES, "-Xmx256m -XX:+UseSerailGC"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("$" + LocalWorkerProcesses.WORKER_JAVA_OPTS_VARIABLE)
        .hasMessageContaining("Unrecognized VM option 'UseSerailGC'");
    assertThatThrownBy(() -> LocalWorkerProcesses.checkWorkerJavaOptions(LocalWorkerProcesses.Jvm.CASES, "-Xmx256m 1g"))
        .hasMessageContaining("'1g'");
  }

  @Test
  void optionsAJvmAcceptsAndNoOptionsAtAllPassTheCheck() {
    LocalWorkerProcesses.checkWorkerJavaOptions(LocalWorkerProcesses.Jvm.CASES, "-Xmx256m -XX:+UseSerialGC");
    LocalWorkerProcesses.checkWorkerJavaOptions(LocalWorkerProcesses.Jvm.CASES, "  ");
    LocalWorkerProcesses.checkWorkerJavaOptions(LocalWorkerProcesses.Jvm.CASES, null);
  }

  /** What the run says when a worker exits: the line of its log that says why, not a stack frame. */
  @Test
  void theTellingLineOfAWorkersLogNamesTheErrorNotAStackFrameNorTheJvmsGenericEnd() throws Exception {
    Path refused = Files.writeString(dir.resolve("worker-1.log"), "Unrecognized VM option 'UseSerailGC'\n"
        + "Error: Could not create the Java Virtual Machine.\nError: A fatal exception has occurred. Program will exit.\n\n");
    assertThat(LocalWorkerProcesses.tellingLine(refused)).isEqualTo("Unrecognized VM option 'UseSerailGC'");
    Path oom = Files.writeString(dir.resolve("worker-2.log"), "12:00:00.000 INFO  [main] WorkerSession - starting\n"
        + "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n"
        + "\tat java.base/java.util.HashMap.resize(HashMap.java:702)\n\tat java.base/java.util.HashMap.hash(HashMap.java:338)\n");
    assertThat(LocalWorkerProcesses.tellingLine(oom)).endsWith("java.lang.OutOfMemoryError: Java heap space");
    Path quiet = Files.writeString(dir.resolve("worker-3.log"), "started\nstopped\n");
    assertThat(LocalWorkerProcesses.tellingLine(quiet)).as("nothing telling: the last line").isEqualTo("stopped");
    Path longLine = Files.writeString(dir.resolve("worker-4.log"), "x".repeat(5000) + "\n");
    assertThat(LocalWorkerProcesses.tellingLine(longLine)).hasSize(303).endsWith("...");
    assertThat(LocalWorkerProcesses.tellingLine(Files.writeString(dir.resolve("empty.log"), ""))).isEmpty();
    assertThat(LocalWorkerProcesses.tellingLine(dir.resolve("missing.log"))).isEmpty();
  }

  @Test
  void theJvmsComplaintLeavesOutLaunchersNotesAndLogLinesAndIsCut() {
    assertThat(LocalWorkerProcesses.jvmComplaint("NOTE: Picked up JDK_JAVA_OPTIONS: -Xlog:os\n"
        + "[0.003s][info][os] Use of CLOCK_MONOTONIC is supported\n"
        + "The Java thread stack size specified is too small. Specify at least 136k\n"
        + "Error: Could not create the Java Virtual Machine.\n", 1))
        .isEqualTo("The Java thread stack size specified is too small. Specify at least 136k Error: Could not create the Java Virtual Machine.");
    assertThat(LocalWorkerProcesses.jvmComplaint("", 1)).isEqualTo("exit code 1");
    assertThat(LocalWorkerProcesses.jvmComplaint("y".repeat(1000), 1)).hasSize(LocalWorkerProcesses.QUOTE_LIMIT + 3);
  }

  /** A JVM told to wait for a debugger never answers -version: the check gives up, kills it, and does not hang. */
  @Test
  void aJvmThatNeverAnswersIsKilledAndTheOptionsPassUnchecked() {
    long before = ProcessHandle.current().descendants().count();
    long started = System.nanoTime();
    LocalWorkerProcesses.checkWorkerJavaOptions(LocalWorkerProcesses.Jvm.CASES,
        "-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0", java.time.Duration.ofSeconds(2));
    assertThat(System.nanoTime() - started).as("it waited its limit, then went on").isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(2));
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10))
        .until(() -> ProcessHandle.current().descendants().count() <= before);
  }
}
