package dev.tally.cli;

import dev.tally.cli.client.ApiClient;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code tally wait RUN}: waits for a run on a server to end, with {@code tally run}'s progress line, and
 * exits with {@code tally run}'s code ({@link Main#exitCodeOf}); how it waits is {@link RunWait}'s.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "wait",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Wait for a run on a Tally server to end, showing its progress.",
      "Exit code: 0 every case passed; 1 a case failed, errored or was cancelled, or the server gave no answer;"
          + " 2 bad usage, an unknown run or a refused token."
    })
public final class WaitCommand extends ClientCommand {
  @Parameters(index = "0", paramLabel = "RUN", description = "The run's id (tally submit prints it; tally runs lists them).")
  String run;

  @Option(names = "--no-progress", description = "Do not draw the progress bar (it is off anyway when stderr is not a terminal).")
  boolean noProgress;

  @Override
  int run(ApiClient client, PrintWriter out, PrintWriter err) throws Exception {
    return RunWait.await(client, runId(run), !noProgress, out, err);
  }
}
