package dev.tally.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.cli.client.ApiClient;
import dev.tally.cli.client.ConvertedDataset;
import dev.tally.cli.client.DatasetUpload;
import dev.tally.cli.client.SubmissionState;
import dev.tally.coordinator.CoordinatorBuilder;
import dev.tally.core.DurationText;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.store.IdempotencyRules;
import dev.tally.datasets.ReadOptions;
import dev.tally.http.ApiServer;
import dev.tally.http.dto.RunObject;
import dev.tally.worker.eval.CommandTemplate;
import dev.tally.worker.eval.ModelSettings;
import dev.tally.worker.eval.ServeEvaluator;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

/**
 * {@code tally submit DATASET --server URL}: submits a dataset to a Tally server as one run, with the
 * evaluator and settings options of {@code tally run}, and prints the run's id and URL.
 *
 * <p><b>Exactly one run per submission.</b> The submission's idempotency key is made once, when it starts,
 * and written down ({@link SubmissionState}) before the first request; every retry sends it again (the
 * server answers a repeat with the first answer, never a second run), and so does a second invocation with
 * the same arguments after the first was killed or gave up. The key is forgotten once the server has
 * answered finally. {@code --idempotency-key K} uses the caller's own key (a CI build id) instead, and no
 * state file: the caller keeps it.
 *
 * <p><b>The dataset</b>, in any format {@code tally run} reads, is read and written as JSON Lines to a
 * temporary file ({@link ConvertedDataset}: a bad record stops the submission naming the file and line, exit
 * 2, nothing sent), then checked by the case grammar and streamed from disk as {@code application/x-ndjson}
 * ({@link DatasetUpload}), never whole in memory.
 *
 * <p>Exit codes: 0 the run was created (or, with {@code --wait}, as {@code tally wait}: 0 every case
 * passed, 1 any did not); 1 the server could not be reached or gave no final answer within the retries
 * (the key is kept: run the same command again); 2 bad usage, a bad dataset, or the server refused the
 * submission.
 *
 * <p>Thread-safety: one instance per invocation, on picocli's thread.
 */
@Command(
    name = "submit",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Submit a dataset (any format tally run reads) to a Tally server as one run; print the run's id and URL.",
      "A submission keeps one idempotency key across its retries and across a second invocation with the same arguments,"
          + " so it makes exactly one run.",
      "Exit code: 0 submitted (with --wait: every case passed); 1 no answer from the server (run the same command again),"
          + " or with --wait a case failed or errored; 2 bad usage, bad input, or refused by the server."
    })
public final class SubmitCommand extends ClientCommand {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Parameters(index = "0", paramLabel = "DATASET", description = "Dataset file, in any format tally run reads (see --format);"
      + " sent as JSON Lines.")
  Path dataset;

  @Mixin RunCommand.EvaluatorOptions evaluatorOptions;

  @Mixin AttemptOptions attemptOptions;

  @Mixin DatasetOptions datasetOptions;

  @Option(names = "--name", description = "The run's name, shown in tally runs (default: the dataset's file name).", paramLabel = "NAME")
  String name;

  @Option(names = "--idempotency-key", paramLabel = "KEY",
      description = "Use this key (1 to 255 printable ASCII characters; a CI build id) instead of one made and kept in a state"
          + " file: the same key again gets the same run.")
  String idempotencyKey;

  @Option(names = "--state-dir", paramLabel = "DIR",
      description = "Where a pending submission's key is kept until the server confirms it (default: $" + SubmissionState.DIRECTORY_VARIABLE
          + ", else $XDG_STATE_HOME/tally/submissions, else ~/.local/state/tally/submissions).")
  Path stateDir;

  @Option(names = "--wait", description = "Then wait for the run to end, as tally wait does, and exit as tally run would.")
  boolean await;

  @Option(names = "--no-progress", description = "With --wait: do not draw the progress bar (it is off anyway when stderr is not a terminal).")
  boolean noProgress;

  /** Where the key is made and kept (tests may replace the clock). */
  Clock clock = Clock.systemUTC();

  @Override
  int run(ApiClient client, PrintWriter out, PrintWriter err) throws Exception {
    AttemptLimits limits = attemptOptions.limits();
    EvaluatorSpec evaluator = evaluatorOptions.toSpec(spec.commandLine());
    Optional<dev.tally.worker.eval.CaseFields> caseFields = RunCommand.EvaluatorOptions.caseFields(evaluator, spec.commandLine());
    if (idempotencyKey != null) {
      IdempotencyRules.keyProblem(idempotencyKey).ifPresent(problem -> {
        throw new ParameterException(spec.commandLine(), "--idempotency-key: " + problem);
      });
    }
    ReadOptions reading = datasetOptions.readOptions();
    Path real = realPath(dataset);
    String fields = fields(real, evaluator, limits);
    ConvertedDataset converted;
    try {
      converted = ConvertedDataset.of(dataset, reading,
          caseFields.isEmpty() ? node -> Optional.empty() : caseFields.get().missingField(),
          caseFields.map(RunCommand.EvaluatorOptions::flag).orElse("--cmd"));
    } catch (DatasetException e) {
      err.println("tally: " + e.getMessage());
      return Main.EXIT_USAGE;
    } catch (IOException e) {
      err.println("tally: cannot write " + dataset + " as JSON Lines for the upload: " + e.getMessage());
      return Main.EXIT_USAGE;
    }
    try (converted) {
      return submit(client, converted, real, fields, out, err);
    }
  }

  /** Submits the converted dataset (see the class doc). */
  private int submit(ApiClient client, ConvertedDataset converted, Path real, String fields, PrintWriter out, PrintWriter err)
      throws Exception {
    DatasetUpload upload;
    try {
      upload = DatasetUpload.check(converted.jsonLines(), fields, node -> Optional.empty(), "--cmd");
    } catch (DatasetException e) {
      throw new IllegalStateException("the converted dataset breaks the case grammar: " + e.getMessage(), e);
    }

    SubmissionState state = null;
    SubmissionState.Pending pending = null;
    String key = idempotencyKey;
    if (key == null) {
      state = new SubmissionState(stateDir != null ? stateDir : SubmissionState.defaultDirectory(serverOptions.environment,
          Path.of(System.getProperty("user.home"))));
      try {
        pending = state.begin(new SubmissionState.Identity(client.server().toString(), real.toString(), upload.sha256(), fields),
            SubmissionState::newKey, clock);
      } catch (IOException e) {
        err.println("tally: cannot keep the submission's key in " + state.directory() + ": " + e.getMessage()
            + " (--state-dir DIR puts it elsewhere; --idempotency-key KEY needs no state file)");
        return Main.EXIT_USAGE;
      }
      key = pending.key();
      if (pending.resumed()) {
        err.printf("tally: finishing the submission of %s started %s ago (its key %s, kept in %s): an earlier tally submit with"
            + " these arguments did not hear the server's answer; the server answers it with the same run%n", dataset,
            since(pending.startedAt(), clock.instant()), key, pending.file());
        if (Duration.between(pending.startedAt(), clock.instant()).compareTo(CoordinatorBuilder.DEFAULT_IDEMPOTENCY_TTL) > 0) {
          err.printf("tally: warning: that is longer ago than a server keeps a key by default (%s, --idempotency-ttl): if the"
              + " server made the run and has forgotten the key since, this makes a second run%n",
              DurationText.text(CoordinatorBuilder.DEFAULT_IDEMPOTENCY_TTL));
        }
      }
    }
    err.printf("tally: submitting %s (%s) to %s with idempotency key %s%n", dataset, Words.count(upload.cases(), "case"),
        client.server(), key);
    err.flush();

    ApiClient.Request request = new ApiClient.Request("POST", ApiServer.BASE + "/runs",
        Map.of("Content-Type", "application/x-ndjson", "Idempotency-Key", sfString(key)), upload::body, true, null);
    ApiClient.Response response;
    try {
      response = client.send(request, "submitting " + dataset, "with the same idempotency key");
    } catch (ApiClient.Unreachable e) {
      err.println("tally: " + e.getMessage());
      if (pending != null) {
        err.println("tally: whether the server made the run is not known; the key stays in " + pending.file()
            + ": the same tally submit command finishes this submission (the same run, never a second)");
      } else {
        err.println("tally: whether the server made the run is not known: the same command, with the same --idempotency-key,"
            + " finishes this submission (the same run, never a second)");
      }
      return Main.EXIT_FAILED;
    }
    if (!response.ok()) {
      // A final refusal creates nothing and holds no key: a corrected submission is a new one.
      forget(state, pending, err);
      ApiClient.Refused refused = ApiClient.Refused.of(response.status(), response.body());
      if (refused.problem() != null && refused.problem().line() != null && converted.datasetLine(refused.problem().line()) > 0
          && refused.problem().detail() != null) {
        // Said once, in the dataset's own lines: the body's numbering (its line 1 is the run's fields) is not the user's.
        err.println("tally: the server refused the submission: " + (refused.problem().title() == null ? "HTTP " + response.status()
            : refused.problem().title()) + " (" + response.status() + ")");
        err.println("tally: " + inDataset(refused.problem().detail(), dataset.toString(), converted::datasetLine));
      } else {
        err.println("tally: the server refused the submission: " + refused.getMessage());
      }
      if (response.status() == 401) {
        err.println("tally: give the server's API token with --token-file FILE or $TALLY_API_TOKEN");
      }
      return Main.EXIT_USAGE;
    }
    forget(state, pending, err); // the server confirmed: the run exists
    RunObject run = response.json(RunObject.class);
    String location = response.headers().firstValue("Location").orElse(ApiServer.BASE + "/runs/" + run.id());
    String url = location.startsWith("/") ? client.server() + location : location;
    err.printf("tally: run %d %s (%s)%n", run.id(), response.replayed()
        ? "was made by an earlier request of this submission; the server answered with it again" : "created",
        Words.count(run.total(), "case"));
    out.println(run.id() + " " + url);
    out.flush();
    if (!await) {
      return Main.EXIT_PASSED;
    }
    return RunWait.await(client, run.id(), !noProgress, out, err);
  }

  /** Forgets the key once the server answered finally; a failure to delete is said, not fatal. */
  private static void forget(SubmissionState state, SubmissionState.Pending pending, PrintWriter err) {
    if (state == null || pending == null) {
      return;
    }
    try {
      state.forget(pending);
    } catch (IOException e) {
      err.println("tally: the server answered, but the state file " + pending.file() + " could not be deleted (" + e.getMessage()
          + "); delete it, or the same command would get this run again rather than a new one");
    }
  }

  /**
   * The run's fields, as the body's first line: the name, the evaluator, and only the settings typed (the
   * server's coordinator builder has the defaults, the same as {@code tally run}'s).
   */
  private String fields(Path real, EvaluatorSpec evaluator, AttemptLimits limits) throws IOException {
    ObjectNode body = JSON.createObjectNode();
    body.put("name", name != null ? name : real.getFileName().toString());
    ObjectNode e = body.putObject("evaluator");
    e.put("kind", evaluator.kind());
    if (evaluator.options().containsKey("cmd")) {
      e.put("cmd", evaluator.options().get("cmd"));
    }
    if (evaluator.options().containsKey(ServeEvaluator.OPTION)) {
      e.put(ServeEvaluator.OPTION, Boolean.parseBoolean(evaluator.options().get(ServeEvaluator.OPTION)));
    }
    if (evaluator.options().containsKey("millis")) {
      e.put("millis", Long.parseLong(evaluator.options().get("millis")));
    }
    if (evaluator.kind().equals("model")) {
      e.setAll(ModelSettings.toJson(evaluator.options()));
    }
    java.util.List<String> scorers = dev.tally.core.score.Scorers.specsOf(evaluator.options());
    if (!scorers.isEmpty()) {
      scorers.forEach(body.putArray("scorers")::add);
    }
    ObjectNode settings = JSON.createObjectNode();
    if (attemptOptions.maxAttemptsGiven()) {
      settings.put("maxAttempts", limits.maxAttempts());
    }
    if (attemptOptions.timeoutRetriesGiven()) {
      settings.put("timeoutRetries", limits.timeoutRetries());
    }
    if (spec.commandLine().getParseResult().hasMatchedOption("--case-timeout")) {
      settings.put("caseTimeout", DurationText.text(evaluator.caseTimeout()));
    }
    if (evaluator.options().containsKey(EvaluatorSpec.FAIL_FAST_OPTION)) {
      settings.put("failFast", EvaluatorSpec.failFastCases(evaluator.options()));
    }
    if (!settings.isEmpty()) {
      body.set("settings", settings);
    }
    return JSON.writeValueAsString(body);
  }

  /** The dataset's one name (links followed), as {@code tally run} names it. */
  private static Path realPath(Path file) {
    try {
      return file.toRealPath();
    } catch (IOException e) {
      return file.toAbsolutePath().normalize(); // unreadable now: reading it will say why
    }
  }

  /** A key as an RFC 8941 sf-string, as the draft asks: quoted, with {@code "} and {@code \} escaped. */
  static String sfString(String key) {
    return "\"" + key.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** For messages: when the submission started. */
  static String since(Instant startedAt, Instant now) {
    return DurationText.text(Duration.ofSeconds(Math.max(0, Duration.between(startedAt, now).toSeconds())));
  }

  /** The place a problem's detail starts with, when it is a line of the request body: {@code request body line 5: }. */
  private static final java.util.regex.Pattern BODY_LINE_FIRST =
      java.util.regex.Pattern.compile("^" + java.util.regex.Pattern.quote(dev.tally.http.ApiServer.REQUEST_BODY) + " line (\\d+)");

  /**
   * A problem's detail with the lines of the request body it names written as the dataset's lines: the place
   * it starts with ({@code request body line 5: duplicate id "a" (first on line 2)} becomes {@code cases.jsonl
   * line 4: duplicate id "a" (first on line 1)}), and a duplicate id's first line ({@link
   * CaseSourceException#withFirstLine}). Nothing between is touched: an id may hold any text. A line that is
   * no dataset line (the run's fields) is left as it is.
   *
   * @param detail the problem's detail
   * @param dataset the dataset file's name as the user gave it
   * @param datasetLine the dataset's line of a body line, 0 for none
   */
  static String inDataset(String detail, String dataset, java.util.function.LongUnaryOperator datasetLine) {
    String out = CaseSourceException.withFirstLine(detail, line -> {
      long d = datasetLine.applyAsLong(line);
      return d > 0 ? "line " + d : null;
    });
    java.util.regex.Matcher m = BODY_LINE_FIRST.matcher(out);
    if (m.find()) {
      long d = datasetLine.applyAsLong(Long.parseLong(m.group(1)));
      if (d > 0) {
        out = dataset + " line " + d + out.substring(m.end());
      }
    }
    return out;
  }
}
