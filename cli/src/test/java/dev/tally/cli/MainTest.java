package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The command line {@code main} builds: only the subcommand named first, or every one. */
class MainTest {
  @Test
  void aNamedSubcommandIsTheOnlyOneBuiltAndEveryNameFindsItsOwn() {
    for (Class<?> c : Main.SUBCOMMANDS) {
      String name = c.getAnnotation(CommandLine.Command.class).name();
      CommandLine line = Main.commandLine(new String[] {name, "--help"});
      assertThat(line.getSubcommands().keySet()).as(name).containsExactly(name);
      assertThat((Object) line.getSubcommands().get(name).getCommand()).as(name).isInstanceOf(c);
    }
  }

  @Test
  void helpVersionAndAnUnknownNameGetEverySubcommand() {
    int all = Main.commandLine().getSubcommands().size();
    assertThat(all).isEqualTo(Main.SUBCOMMANDS.size());
    assertThat(Main.commandLine(new String[] {}).getSubcommands()).hasSize(all);
    assertThat(Main.commandLine(new String[] {"--help"}).getSubcommands()).hasSize(all);
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
