package dev.tally.cli;

import dev.tally.cli.client.ApiClient;
import dev.tally.http.ApiServer;
import dev.tally.http.dto.CountersObject;
import dev.tally.http.dto.RunList;
import dev.tally.http.dto.RunObject;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * {@code tally runs}: the runs on a server, newest first, one line each ({@code GET /api/v1/runs}).
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "runs",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "List the runs on a Tally server, newest first: state, cases ended of the total, verdicts, name.",
      "Exit code: 0 listed; 1 no answer from the server; 2 bad usage or a refused token."
    })
public final class RunsCommand extends ClientCommand {
  @Option(names = "--limit", defaultValue = "20", description = "How many runs (1 to " + dev.tally.core.store.RunPage.MAX_LIMIT + ", the API's page; default: ${DEFAULT-VALUE}).", paramLabel = "N")
  int limit;

  @Option(names = "--before", paramLabel = "RUN", description = "Only runs older than this one (the next page).")
  Long before;

  @Override
  int run(ApiClient client, PrintWriter out, PrintWriter err) throws Exception {
    if (limit < 1 || limit > dev.tally.core.store.RunPage.MAX_LIMIT) {
      throw new ParameterException(spec.commandLine(), "--limit must be from 1 to " + dev.tally.core.store.RunPage.MAX_LIMIT + ", got " + limit);
    }
    String path = ApiServer.BASE + "/runs?limit=" + limit + (before != null ? "&before=" + before : "");
    RunList page = ApiClient.requireOk(client.send(ApiClient.Request.get(path), "listing runs", "")).json(RunList.class);
    if (page.runs().isEmpty()) {
      err.println("tally: no runs on " + client.server() + (before != null ? " before run " + before : ""));
      return Main.EXIT_PASSED;
    }
    out.printf("%6s  %-9s  %15s  %7s  %7s  %7s  %8s  %-24s  %s%n", "RUN", "STATE", "ENDED/TOTAL", "PASSED", "FAILED",
        "ERRORED", "ACCURACY", "CREATED", "NAME");
    for (RunObject r : page.runs()) {
      CountersObject c = r.counters();
      long ended = c.ended();
      out.printf("%6d  %-9s  %15s  %7d  %7d  %7d  %8s  %-24s  %s%n", r.id(), r.state(), ended + "/" + r.total(), c.passed(),
          c.failed(), c.errored(), dev.tally.core.stats.EstimateText.percentOnly(r.accuracy() == null ? null : r.accuracy().estimate()), r.createdAt(), r.name());
    }
    if (page.next() != null) {
      long oldest = page.runs().get(page.runs().size() - 1).id();
      err.println("tally: more runs: tally runs --before " + oldest);
    }
    return Main.EXIT_PASSED;
  }
}
