package dev.tally.cli;

import dev.tally.cli.client.ApiClient;
import dev.tally.http.ProblemType;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * What the client commands share: the server's options, and what their failures mean as exit codes. A
 * refusal by the server that another attempt would not change (a 4xx: an unknown run, a wrong token, a bad
 * line) is said from its problem body (title, detail, the place at fault) and exits {@value
 * Main#EXIT_USAGE}; a server that could not be reached, or gave no final answer within the retries, exits
 * {@value Main#EXIT_FAILED}.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
abstract class ClientCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin ServerOptions serverOptions;

  @Override
  public final Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    PrintWriter out = spec.commandLine().getOut();
    ApiClient client = serverOptions.client(err);
    try {
      return run(client, out, err);
    } catch (ApiClient.Refused e) {
      err.println("tally: " + e.getMessage() + hint(e, client));
      return Main.EXIT_USAGE;
    } catch (ApiClient.Unreachable e) {
      err.println("tally: " + e.getMessage());
      return Main.EXIT_FAILED;
    } catch (java.io.IOException e) {
      err.println("tally: " + e.getMessage());
      return Main.EXIT_FAILED;
    } finally {
      out.flush();
      err.flush();
    }
  }

  /**
   * What the command does.
   *
   * @return the exit code
   * @throws ApiClient.Refused if the server refused a request finally
   * @throws ApiClient.Unreachable if no final answer came
   * @throws java.io.IOException if an answer is not what the API answers (not JSON of its shape), or a file
   *     cannot be written
   */
  abstract int run(ApiClient client, PrintWriter out, PrintWriter err) throws Exception;

  /** What to do about a refusal, where the problem alone may not say. */
  private static String hint(ApiClient.Refused e, ApiClient client) {
    if (e.status() == 401) {
      return " (give the server's API token with --token-file FILE or $TALLY_API_TOKEN)";
    }
    if (e.problem() != null && ProblemType.RUN_NOT_FINISHED.uri().equals(e.problem().type())) {
      return " (tally wait waits for it)";
    }
    return "";
  }

  /**
   * A run id as typed.
   *
   * @throws picocli.CommandLine.ParameterException if it is not a positive whole number
   */
  long runId(String text) {
    try {
      long id = Long.parseLong(text.strip());
      if (id >= 1) {
        return id;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new picocli.CommandLine.ParameterException(spec.commandLine(), "RUN must be a run id (a whole number >= 1, see tally runs), got '" + text + "'");
  }
}
