package dev.tally.cli;

import dev.tally.cli.client.ApiClient;
import dev.tally.http.ApiServer;
import dev.tally.http.dto.RunObject;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code tally cancel RUN}: cancels a run on a server ({@code POST /api/v1/runs/ID/cancel}). Cancel is
 * idempotent on the server (cancelling twice is one cancel), so a retry after a lost answer is harmless and
 * no key is needed. A run that has finished cannot be cancelled: the server refuses it (409), and this
 * command says so and exits 2.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "cancel",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Cancel a run on a Tally server: its cases not yet ended are never run (again); cancelling twice is one cancel.",
      "Exit code: 0 cancelled (or already cancelled); 1 no answer from the server; 2 bad usage, an unknown or finished run,"
          + " or a refused token."
    })
public final class CancelCommand extends ClientCommand {
  @Parameters(index = "0", paramLabel = "RUN", description = "The run's id.")
  String run;

  @Override
  int run(ApiClient client, PrintWriter out, PrintWriter err) throws Exception {
    long id = runId(run);
    RunObject cancelled = ApiClient.requireOk(client.send(ApiClient.Request.post(ApiServer.BASE + "/runs/" + id + "/cancel"),
        "cancelling run " + id, "")).json(RunObject.class);
    RunWait.print(cancelled, out);
    return Main.EXIT_PASSED;
  }
}
