package dev.tally.cli;

import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code tally} command. Exit codes: 0 every case passed; 1 the run finished with a fail or an error
 * (or could not finish); 2 bad usage or bad input.
 */
@Command(
    name = "tally",
    mixinStandardHelpOptions = true,
    version = "tally 0.1.0",
    description = "Fault-tolerant distributed eval runner.")
public final class Main {
  /** Every case passed. */
  public static final int EXIT_PASSED = 0;
  /** The run finished with a fail or an error, or could not finish. */
  public static final int EXIT_FAILED = 1;
  /** Bad usage or bad input (picocli's usage-error code is 2 as well). */
  public static final int EXIT_USAGE = 2;

  /**
   * The subcommands, in the order the help lists them. Not in the annotation: picocli would build every
   * one's model (reflection over its options, its class initialised, with its loggers and mappers) at each
   * start, a third of a second of CPU that each local worker JVM of {@code tally run} paid before joining.
   */
  static final java.util.List<Class<?>> SUBCOMMANDS = java.util.List.of(RunCommand.class,
      ResumeCommand.class,
      RetryErrorsCommand.class,
      RescoreCommand.class,
      ServerCommand.class,
      SubmitCommand.class,
      RunsCommand.class,
      WaitCommand.class,
      ResultsCommand.class,
      CompareCommand.class,
      CancelCommand.class,
      WorkerCommand.class,
      StatusCommand.class,
      dev.tally.cli.bench.BenchCommand.class,
      dev.tally.cli.bench.DetectorBenchCommand.class,
      dev.tally.cli.simulate.SimulateCommand.class,
      dev.tally.cli.bench.FailoverBenchCommand.class,
      dev.tally.cli.bench.StragglerBenchCommand.class,
      dev.tally.cli.bench.SubmitBenchCommand.class,
      dev.tally.cli.bench.ConnectionsBenchCommand.class,
      dev.tally.cli.bench.DispatchBenchCommand.class,
      dev.tally.cli.chaos.ChaosCommand.class,
      CommandLine.HelpCommand.class);

  /**
   * The least parallelism of the common fork-join pool in every {@code tally} JVM. On fewer than three cores
   * the JDK makes it 1, and {@link java.util.concurrent.CompletableFuture}'s default executor is then a new
   * thread per task; {@code java.net.http.HttpClient.sendAsync} completes every response on that executor
   * (JDK 17's {@code HttpClientImpl}), so a model worker on this 2-core machine started and ended a thread per
   * request (JFR: 1,351 threads for about 1,375 evals in one worker of {@code tally bench --evaluator
   * model}). Set before anything touches the pool, by this class's initialiser; a value given with
   * {@code -D} is kept.
   */
  static final int MIN_COMMON_POOL_PARALLELISM = 2;

  /** The system property the common fork-join pool reads its parallelism from. */
  static final String COMMON_POOL_PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";

  /**
   * The system property that turns Netty's Flight Recorder events on or off. Netty 4.2 registers its buffer
   * allocator's events with JFR when it allocates its first chunk, and that registration starts JFR's
   * metadata repository: about 50 ms of CPU on the first frame of every connection's event loop, in every
   * {@code tally} JVM (async-profiler, {@code tally run} with three local workers), for events nobody
   * records. Off unless given with {@code -D} ({@code -Dio.netty.jfr.enabled=true} brings them back for a
   * recording).
   */
  static final String NETTY_JFR = "io.netty.jfr.enabled";

  static {
    if (System.getProperty(COMMON_POOL_PARALLELISM) == null
        && Runtime.getRuntime().availableProcessors() - 1 < MIN_COMMON_POOL_PARALLELISM) {
      System.setProperty(COMMON_POOL_PARALLELISM, Integer.toString(MIN_COMMON_POOL_PARALLELISM));
    }
    if (System.getProperty(NETTY_JFR) == null) {
      System.setProperty(NETTY_JFR, "false");
    }
  }

  private Main() {}

  /**
   * The exit code of a run that ended, the one mapping {@code tally run}, {@code resume}, {@code wait} and
   * {@code submit --wait} share: {@link #EXIT_PASSED} if every case passed, else {@link #EXIT_FAILED} (a
   * case failed, errored, ran out of attempts, or was cancelled).
   *
   * @param passed the cases that passed
   * @param total the run's cases
   */
  public static int exitCodeOf(long passed, long total) {
    return passed == total ? EXIT_PASSED : EXIT_FAILED;
  }

  public static void main(String[] args) {
    // Messages quote what datasets, servers and options held: shown as a terminal may show it.
    System.exit(commandLine(args).setErr(TerminalText.writer(System.err)).execute(args));
  }

  /** The configured command line, every subcommand in it (the help lists them all); for tests too. */
  public static CommandLine commandLine() {
    CommandLine line = new CommandLine(new Main());
    SUBCOMMANDS.forEach(line::addSubcommand);
    return configured(line);
  }

  /** Settings of every command line main builds; every subcommand's {@code --version} says tally's. */
  private static CommandLine configured(CommandLine line) {
    String[] version = line.getCommandSpec().version();
    line.getSubcommands().values().forEach(sub -> sub.getCommandSpec().version(version));
    return line.setCaseInsensitiveEnumValuesAllowed(true).setParameterExceptionHandler(Main::usageError)
        .setExecutionExceptionHandler(Main::failure);
  }

  /**
   * A command that failed on the machine's trouble (a file, a socket, the store: {@link java.io.IOException},
   * {@link java.io.UncheckedIOException}, {@link dev.tally.core.store.StoreException}) says it in one line,
   * with its causes, and exits {@link #EXIT_FAILED}; anything else is a bug, and keeps its stack trace.
   */
  static int failure(Exception e, CommandLine command, CommandLine.ParseResult parsed) throws Exception {
    if (!(e instanceof java.io.IOException || e instanceof java.io.UncheckedIOException
        || e instanceof dev.tally.core.store.StoreException)) {
      throw e;
    }
    StringBuilder text = new StringBuilder(e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    for (Throwable cause = e.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
      if (cause.getMessage() != null && !text.toString().contains(cause.getMessage())) {
        text.append(": ").append(cause.getMessage());
      }
    }
    String said = text.toString();
    command.getErr().println(said.startsWith("tally") ? said : "tally: " + said);
    command.getErr().flush();
    return EXIT_FAILED;
  }

  /**
   * Says what is wrong with the command line in a few lines: the error (which names the option or the
   * parameter and the value), picocli's suggestions for a misspelt word, and where the help is. A
   * subcommand's whole usage (some 230 lines for {@code tally run}) would push the error out of sight, and
   * so would the top level's (80 lines): a mistaken command gets the commands' names on one line.
   *
   * @return {@link #EXIT_USAGE}
   */
  static int usageError(CommandLine.ParameterException e, String[] args) {
    CommandLine command = e.getCommandLine();
    java.io.PrintWriter err = command.getErr();
    // Misspelt options first, whatever picocli found first: "--dbb x.db" made it say only that --db is missing.
    List<String> unknownOptions = unknownOptions(command, args);
    // The message quotes what was typed: shown as a terminal may show it, and cut.
    err.println("tally: " + TerminalText.safe(unknownOptions.isEmpty() ? e.getMessage() : unknownOptionsMessage(unknownOptions),
        MAX_ERROR_CHARS));
    List<String> near = List.of();
    List<String> longOptions = command.getCommandSpec().optionsMap().keySet().stream().filter(o -> o.startsWith("--")).toList();
    if (unknownOptions.size() == 1) {
      // "--wokers": the options one or two edits away, by the same distance as commands.
      near = nearest(unknownOptions.get(0).split("=", 2)[0], longOptions);
    } else if (unknownOptions.size() > 1) {
      // One suggestion for each: "--workers for --wokers, --slots for --slotz".
      List<String> each = new java.util.ArrayList<>();
      for (String typed : unknownOptions) {
        String name = typed.split("=", 2)[0];
        nearest(name, longOptions).stream().findFirst().ifPresent(n -> each.add(n + " for " + name));
      }
      if (!each.isEmpty()) {
        err.println(TerminalText.safe("Did you mean: " + String.join(", ", each) + "?", MAX_ERROR_CHARS));
      }
      near = null; // said, or nothing near: picocli's guesses would be for one of them only
    } else if (command.getParent() == null && e instanceof CommandLine.UnmatchedArgumentException u
        && !u.getUnmatched().isEmpty() && !u.getUnmatched().get(0).startsWith("-")) {
      // A command a letter or two off ("rnu", "wiat"): picocli compares letter pairs, and finds nothing like
      // "rnu" for "run", or other commands before "wait" for "wiat".
      near = nearest(u.getUnmatched().get(0), command.getSubcommands().keySet());
    }
    if (near != null && !near.isEmpty()) {
      err.println("Did you mean: " + String.join(" or ", near) + "?");
    } else if (near != null && unknownOptions.isEmpty()) {
      CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
    }
    if (command.getParent() == null) {
      err.println("Commands: " + command.getSubcommands().keySet().stream().filter(name -> !name.equals("help"))
          .collect(java.util.stream.Collectors.joining(", ")) + ".");
      err.println("See 'tally --help' for what each does, and 'tally help COMMAND' for its options.");
    } else {
      err.println("See '" + command.getCommandSpec().qualifiedName() + " --help' for its options.");
    }
    err.flush();
    return EXIT_USAGE;
  }

  /** What an option looks like on the command line: {@code --name} or {@code --name=value}. */
  private static final java.util.regex.Pattern OPTION_LIKE = java.util.regex.Pattern.compile("--[A-Za-z][A-Za-z0-9-]*(=.*)?", java.util.regex.Pattern.DOTALL);

  /**
   * The arguments given to {@code command} that look like long options ({@link #OPTION_LIKE}) but are none of
   * its options, in order; none after {@code --}. The value of an option that takes one is skipped, so that
   * {@code --prompt --x} is not read as an unknown {@code --x}.
   */
  static List<String> unknownOptions(CommandLine command, String[] args) {
    var options = command.getCommandSpec().optionsMap();
    List<String> unknown = new java.util.ArrayList<>();
    int from = 0;
    if (command.getParent() != null) {
      String name = command.getCommandName();
      while (from < args.length && !args[from].equals(name)) {
        from++;
      }
      from++;
    }
    for (int i = from; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--")) {
        break;
      }
      String name = a.split("=", 2)[0];
      CommandLine.Model.OptionSpec known = options.get(name);
      if (known != null) {
        if (!a.contains("=") && known.arity().max() > 0 && !known.typeInfo().isBoolean()) {
          i++; // its value, whatever it looks like
        }
      } else if (OPTION_LIKE.matcher(a).matches()) {
        unknown.add(a);
      }
    }
    return unknown;
  }

  /**
   * What an unknown option is said as. picocli's own message lists with it every argument it could not place
   * ("Unknown options: '--wokers', '2'"): the option's value, or the dataset when the value took the
   * dataset's place, which reads as if those were wrong too. They are only what the unknown option left over.
   */
  private static String unknownOptionsMessage(List<String> options) {
    return options.size() == 1 ? "unknown option '" + options.get(0) + "'"
        : "unknown options " + options.stream().map(o -> "'" + o + "'").collect(java.util.stream.Collectors.joining(", "));
  }

  /** The longest error message printed for a command line, in characters (it may quote a long argument). */
  static final int MAX_ERROR_CHARS = 500;

  /** Most edits (a letter added, left out, changed, or two swapped) between a mistyped command and a suggestion. */
  static final int MAX_SUGGESTION_EDITS = 2;

  /**
   * The names within {@link #MAX_SUGGESTION_EDITS} edits of {@code word}, nearest first (at most three):
   * the optimal string alignment distance (Levenshtein's, with a swap of two neighbouring letters as one
   * edit; Damerau, 1964).
   */
  static List<String> nearest(String word, java.util.Collection<String> names) {
    return names.stream().filter(n -> !n.equals("help"))
        .map(n -> java.util.Map.entry(n, edits(word.toLowerCase(java.util.Locale.ROOT), n)))
        .filter(e -> e.getValue() <= MAX_SUGGESTION_EDITS)
        .sorted(java.util.Map.Entry.comparingByValue()).limit(3).map(java.util.Map.Entry::getKey).toList();
  }

  private static int edits(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }

  /**
   * The command line for {@code args}: when the first word names a subcommand, only that one is built (the
   * rest would parse the same: picocli reads a subcommand's arguments with its own model); otherwise (help,
   * version, a typo to be told of) every one is.
   */
  static CommandLine commandLine(String[] args) {
    if (args.length > 0) {
      for (Class<?> c : SUBCOMMANDS) {
        // tally help COMMAND needs every command: it reads the one it is asked about from the others.
        if (c != CommandLine.HelpCommand.class && c.getAnnotation(Command.class).name().equals(args[0])) {
          CommandLine line = new CommandLine(new Main());
          line.addSubcommand(c);
          return configured(line);
        }
      }
    }
    return commandLine();
  }
}
