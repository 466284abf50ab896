package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The command line {@code main} builds: only the subcommand named first, or every one. */
class MainTest {
  /**
   * Runs {@link CommonPoolProbe} in a JVM that sees {@code cores} cores, with {@code extra} JVM options.
   *
   * @return what it printed
   */
  private static String probeCommonPool(int cores, String... extra) throws Exception {
    return probe(cores, java.util.List.of(extra), java.util.List.of());
  }

  private static String probe(int cores, java.util.List<String> jvmOptions, java.util.List<String> args) throws Exception {
    java.util.List<String> options = new java.util.ArrayList<>(java.util.List.of("-XX:ActiveProcessorCount=" + cores));
    options.addAll(jvmOptions);
    java.util.List<String> command = LocalWorkerProcesses.javaCommand(options, CommonPoolProbe.class.getName());
    command.addAll(args);
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
    assertThat(p.waitFor()).as(out).isZero();
    return out;
  }

  @Test
  void onTwoCoresAsyncTasksRunOnTheCommonPoolNotOnAThreadEach() throws Exception {
    assertThat(probeCommonPool(2)).startsWith("parallelism=" + Main.MIN_COMMON_POOL_PARALLELISM + " thread=ForkJoinPool.commonPool-worker-");
    // What the JDK does without it (the reason it exists), and a value given with -D is kept.
    assertThat(probeCommonPool(2, "-D" + Main.COMMON_POOL_PARALLELISM + "=1")).matches("parallelism=1 thread=Thread-\\d+");
    assertThat(probeCommonPool(8)).startsWith("parallelism=7 thread=ForkJoinPool.commonPool-worker-");
  }

  @Test
  void nettysFlightRecorderEventsAreOffUnlessAskedFor() throws Exception {
    // On, Netty registers its events with JFR at a connection's first buffer: JFR's start-up in every JVM.
    assertThat(probe(2, java.util.List.of(), java.util.List.of("netty-jfr"))).isEqualTo("nettyJfr=false");
    assertThat(probe(2, java.util.List.of("-D" + Main.NETTY_JFR + "=true"), java.util.List.of("netty-jfr"))).isEqualTo("nettyJfr=true");
  }

  @Test
  void aNamedSubcommandIsTheOnlyOneBuiltAndEveryNameFindsItsOwn() {
    for (Class<?> c : Main.SUBCOMMANDS) {
      if (c == CommandLine.HelpCommand.class) {
        continue; // tally help COMMAND reads the others: it gets every one (the test below)
      }
      String name = c.getAnnotation(CommandLine.Command.class).name();
      CommandLine line = Main.commandLine(new String[] {name, "--help"});
      assertThat(line.getSubcommands().keySet()).as(name).containsExactly(name);
      assertThat((Object) line.getSubcommands().get(name).getCommand()).as(name).isInstanceOf(c);
    }
  }

  @Test
  void helpVersionTheHelpCommandAndAnUnknownNameGetEverySubcommand() {
    int all = Main.commandLine().getSubcommands().size();
    assertThat(all).isEqualTo(Main.SUBCOMMANDS.size());
    assertThat(Main.commandLine(new String[] {}).getSubcommands()).hasSize(all);
    assertThat(Main.commandLine(new String[] {"--help"}).getSubcommands()).hasSize(all);
    assertThat(Main.commandLine(new String[] {"help", "run"}).getSubcommands()).hasSize(all);
    StringWriter err = new StringWriter();
    CommandLine line = Main.commandLine(new String[] {"rnu"});
    line.setErr(new PrintWriter(err));
    assertThat(line.execute("rnu")).isEqualTo(Main.EXIT_USAGE);
    assertThat(err.toString()).contains("rnu").contains("run");
  }

  @Test
  void aSubcommandParsesAsInTheFullTree() {
    String[] args = {"worker", "--coordinator", "127.0.0.1:7070", "--slots", "3"};
    CommandLine.ParseResult alone = Main.commandLine(args).parseArgs(args).subcommand();
    CommandLine.ParseResult inFull = Main.commandLine().parseArgs(args).subcommand();
    assertThat(alone.matchedOptionValue("--slots", 0)).isEqualTo(3).isEqualTo(inFull.matchedOptionValue("--slots", 0));
    assertThat(alone.originalArgs()).isEqualTo(inFull.originalArgs());
  }
}
