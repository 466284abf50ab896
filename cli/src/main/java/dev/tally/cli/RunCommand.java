package dev.tally.cli;

import java.nio.file.Files;
import java.util.List;
import java.util.ArrayList;
import dev.tally.core.score.Scorers;
import dev.tally.coordinator.Coordinator;
import dev.tally.coordinator.RunResumption;
import dev.tally.core.EvaluatorSpec;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.core.RedeliveryPolicy.AttemptLimits;
import dev.tally.core.store.RunSpec;
import dev.tally.core.store.RunView;
import dev.tally.datasets.ReadOptions;
import dev.tally.worker.eval.CaseFields;
import dev.tally.worker.eval.CommandTemplate;
import dev.tally.worker.eval.EvaluatorFactory;
import dev.tally.worker.eval.ServeEvaluator;
import dev.tally.worker.eval.ModelSettings;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import dev.tally.store.StoreLocation;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;

/**
 * {@code tally run DATASET}: submits a dataset to an embedded coordinator on a SQLite file, starts local
 * worker processes (and accepts remote ones on {@code --listen}), shows progress, and writes the results
 * and the summary.
 */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    defaultValueProvider = ProductDefaults.class,
    description = {
      "Run every case of a dataset (JSON Lines, JSON, CSV, YAML; openai/evals, Inspect and promptfoo samples as they are)"
          + " on local (and remote) workers.",
      "Exit code: 0 every case passed; 1 a case failed or errored; 2 bad usage or bad input; 130 stopped by Ctrl-C (143 by SIGTERM): what is recorded stays, and the same command resumes it."
    })
public final class RunCommand extends RunnerCommand {
  @Mixin EvaluatorOptions evaluatorOptions;

  @Option(names = "--db", converter = DbOptions.Converter.class, paramLabel = "STORE",
      description = "The store: " + DbOptions.GRAMMAR + " (default: tally.db beside the dataset).")
  StoreLocation db;

  @Parameters(index = "0", paramLabel = "DATASET", description = "Dataset file: JSON Lines (one case per line, each an object"
      + " with a unique string \"id\"; a case without one gets an id from its content), a JSON array, CSV with a header row,"
      + " YAML, or openai/evals, Inspect or promptfoo samples (see --format).")
  Path dataset;

  @Mixin AttemptOptions attemptOptions;

  @Option(names = "--group-by", paramLabel = "FIELD", description = "Also state accuracy and mean score per value of this field of the cases"
      + " (metadata.FIELD, else FIELD), in the summary (groups) and the HTML report.")
  String groupBy;

  @Mixin DatasetOptions datasetOptions;

  private AttemptLimits limits;
  private EvaluatorSpec evaluator;
  private Dataset cases;

  @Override
  boolean prepare(PrintWriter err) {
    if (groupBy != null && groupBy.isBlank()) {
      throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--group-by needs a field name, got '" + groupBy + "'");
    }
    limits = attemptOptions.limits();
    evaluator = evaluatorOptions.toSpec(spec.commandLine());
    Optional<CaseFields> fields = EvaluatorOptions.caseFields(evaluator, spec.commandLine());
    ReadOptions reading = datasetOptions.readOptions();
    try {
      cases = fields.isEmpty() ? Dataset.read(dataset, reading)
          : Dataset.read(dataset, reading, fields.get().missingField(), EvaluatorOptions.flag(fields.get()));
      return true;
    } catch (DatasetException e) {
      err.println("tally: " + e.getMessage());
      return false;
    }
  }

  @Override
  StoreLocation db() {
    return db != null ? db : new StoreLocation.SqliteFile(datasetPath().getParent().resolve(OutputFiles.DEFAULT_STORE));
  }

  /**
   * The dataset's one name: its real path (links followed, {@code .} and {@code ..} resolved), so that
   * {@code cases.jsonl} and {@code ./cases.jsonl} are the same dataset for resuming its run.
   */
  @Override
  Path datasetFile() {
    return dataset;
  }

  @Override
  List<String> scorerSpecs() {
    return evaluatorOptions.scorers;
  }

  private Path datasetPath() {
    try {
      return dataset.toRealPath();
    } catch (java.io.IOException e) {
      return dataset.toAbsolutePath().normalize(); // unreadable now: reading it will say why
    }
  }

  /**
   * The run to execute: an unfinished run of the same dataset, settings and cases if the store has one (a
   * coordinator that died mid-run is resumed, and no case already recorded runs again), else a new one;
   * {@link RunResumption#runFor} is the rule. A dataset edited since is a new run, and the message says
   * how to finish the old one.
   */
  @Override
  long chooseRun(Coordinator coordinator, PrintWriter err) {
    RunSpec runSpec = new RunSpec(datasetPath().toString(), evaluator,
        limits, cases.digest());
    RunResumption.Choice choice;
    try {
      choice = coordinator.resumption().runFor(runSpec, cases::open);
    } catch (CaseSourceException e) {
      // The check before the store opened found nothing wrong: the file changed since, or cannot be read now.
      err.println("tally: " + new DatasetException(cases.file(), e.line(), e.detail()).getMessage());
      return -1;
    }
    for (RunView old : choice.changedSince()) {
      err.printf("tally: %s changed since unfinished run %d was made from it; starting a new run"
          + " (tally resume %d --db %s finishes the old one with the cases it stored)%n",
          dataset, old.runId(), old.runId(), db().describe());
    }
    choice.finishedBefore().ifPresent(old -> err.printf("tally: run %d of this dataset and these settings finished"
        + " before; this is a new run of every case (if run %d's results were never written, stop this one:"
        + " tally resume %d --db %s writes them without running any case)%n", old.runId(), old.runId(), old.runId(),
        db().describe()));
    choice.resumed().ifPresent(t -> reportTakeOver(t, err));
    return choice.runId();
  }

  @Override
  String groupBy() {
    return groupBy;
  }

  @Override
  long runIdBeforeOpening() {
    return db() instanceof StoreLocation.SqliteFile file && !java.nio.file.Files.exists(file.file()) ? 1 : -1;
  }

  @Override
  String resumeCommand(long runId) {
    return runId < 0 ? "the same tally run command" : "the same tally run command (or " + resumeInvocation(runId) + ")";
  }

  /** The options that choose and configure the evaluator; shared by run and submit. */
  static final class EvaluatorOptions {
    enum Kind {
      exec,
      model,
      sleep,
      noop
    }

    @Option(names = "--evaluator", defaultValue = "exec", description = "exec, model, sleep or noop (default: ${DEFAULT-VALUE}).", paramLabel = "KIND")
    Kind evaluator;

    @Option(names = "--base-url", paramLabel = "URL", description = "model: the OpenAI-compatible endpoint's base URL; requests go to URL/chat/completions (e.g. https://api.openai.com/v1).")
    String baseUrl;

    @Option(names = "--model", paramLabel = "NAME", description = "model: the model's name, sent as \"model\".")
    String model;

    @Option(names = "--api-key-env", paramLabel = "NAME", description = "model: the environment variable each worker reads the API key from when a case runs (default: " + dev.tally.core.ChatEndpoint.DEFAULT_API_KEY_ENV + "); the key itself is never stored, logged or sent to the coordinator.")
    String apiKeyEnv;

    @Option(names = "--prompt", paramLabel = "TEMPLATE", description = "model: the user message, {field} replaced by the case's field (e.g. 'Question: {question}'); without it the case's input is the prompt (a string, or a list of chat messages sent as it is).")
    String prompt;

    @Option(names = "--system", paramLabel = "TEXT", description = "model: a system message put before the case's messages.")
    String system;

    @Option(names = "--temperature", paramLabel = "T", description = "model: sampling temperature, 0 to 2 (default: the endpoint's).")
    String temperature;

    @Option(names = "--max-completion-tokens", paramLabel = "N", description = "model: most tokens to generate per case, sent as max_tokens (default: the endpoint's).")
    String maxCompletionTokens;

    @Option(names = "--stop", paramLabel = "TEXT", description = "model: a stop sequence; repeat for up to " + ModelSettings.MAX_STOP_SEQUENCES + ".")
    List<String> stop = new ArrayList<>();

    @Option(names = "--model-seed", paramLabel = "N", description = "model: the sampling seed sent to the endpoint (--seed is --sample's).")
    String modelSeed;

    @Option(names = "--model-request-timeout", paramLabel = "DURATION", description = "model: the longest one request may take (default: what is left of the case's --case-timeout); past it the attempt is a retryable timeout.")
    String modelRequestTimeout;

    @Option(names = "--price", paramLabel = "IN,OUT", description = "model: USD per million prompt and completion tokens (e.g. 0.15,0.60); each case's fields get costUsd, the run its cost.")
    String price;

    @Option(names = "--max-concurrency", paramLabel = "N", description = "model: at most N requests in flight for the whole fleet (the coordinator leases at most N of the run's cases at once; halved on a 429 or 503, then grown back).")
    String maxConcurrency;

    @Option(names = "--requests-per-minute", paramLabel = "N", description = "model: at most N requests a minute for the whole fleet.")
    String requestsPerMinute;

    @Option(names = "--tokens-per-minute", paramLabel = "N", description = "model: at most about N tokens a minute for the whole fleet (counted from the responses' usage).")
    String tokensPerMinute;

    @Option(names = "--max-tokens", paramLabel = "N", description = "model: the run's token cap: once its responses used N tokens it leases no more, says so, and waits for a raised cap (tally resume --max-tokens).")
    String maxTokens;

    @Option(names = "--max-cost", paramLabel = "USD", description = "model: the run's spend cap (needs --price): once its responses cost USD it leases no more, says so, and waits for a raised cap (tally resume --max-cost).")
    String maxCost;


    @Option(names = "--cmd", description = "exec: the command per case; {field} is replaced by the case's field, as one argument (shell-quoted inside the script of sh -c and the like; {raw:field} is inserted as it is). The case JSON is on stdin, TALLY_* variables describe the attempt.", paramLabel = "TEMPLATE")
    String cmd;

    @Option(names = "--serve", description = "exec: start --cmd once per slot and hand it the cases one JSON line each on stdin, answering one verdict line per case on stdout (a scorer with a heavy start-up pays it once); --cmd then has no {field} placeholders.")
    boolean serve;

    @Option(names = "--millis", description = "sleep: milliseconds per case when the case has no \"millis\" field (default 0).", paramLabel = "MILLIS")
    Long millis;

    @Option(names = "--scorer", paramLabel = "SPEC", description = "A scorer that judges each case's answer against its target; repeat for several (each its own column, scores.NAME; the first decides the verdict and score): exact, includes, regex, numeric, choice, json, with options after a colon, e.g. exact:ignore-case,ignore-punctuation, numeric:rel=0.01, regex:pattern=^A, json:schema-file=s.json.")
    List<String> scorers = new ArrayList<>();

    @Option(names = "--fail-fast", paramLabel = "N", description = "Pause the run when its first N cases all end in error for the same reason (a command not found, a rejected API key) rather than erroring every case; 0 never (default: " + EvaluatorSpec.DEFAULT_FAIL_FAST_CASES + ").")
    Integer failFast;

    @Option(names = "--case-timeout", converter = DurationConverter.class, description = "Time budget of one attempt; past it the case is killed, and tried again elsewhere at most --timeout-retries times (default: ${DEFAULT-VALUE}).", paramLabel = "DURATION")
    Duration caseTimeout;

    EvaluatorSpec toSpec(picocli.CommandLine cl) {
      Map<String, String> options = new LinkedHashMap<>();
      switch (evaluator) {
        case exec:
          if (cmd == null || cmd.isBlank()) {
            throw new ParameterException(cl, "--evaluator exec needs --cmd TEMPLATE, e.g. --cmd 'python3 -m test {id}'");
          }
          options.put("cmd", cmd);
          if (serve) {
            options.put(ServeEvaluator.OPTION, "true");
            template(new EvaluatorSpec(evaluator.name(), options, Duration.ofDays(1)), cl); // --cmd's own errors first
            try {
              EvaluatorFactory.create(evaluator.name(), options); // the worker's own checks: no placeholders
            } catch (IllegalArgumentException e) {
              throw new ParameterException(cl, "--serve: " + e.getMessage());
            }
          }
          break;
        case sleep:
          if (millis != null) {
            if (millis < 0) { // checked here too, though only sleep uses it
              throw new ParameterException(cl, "--millis must be >= 0, got " + millis);
            }
            options.put("millis", Long.toString(millis));
          }
          break;
        case model:
          modelOptions().forEach((option, value) -> options.put(option.key, value));
          try {
            ModelSettings.parse(options); // what a worker will do with them, checked now
          } catch (ModelSettings.OptionException e) {
            throw new ParameterException(cl, e.getMessage());
          }
          break;
        default:
          break;
      }
      if (evaluator != Kind.model && !modelOptions().isEmpty()) {
        throw new ParameterException(cl, modelOptions().keySet().iterator().next().flag() + " is only for --evaluator model");
      }
      if (millis != null && evaluator != Kind.sleep) {
        throw new ParameterException(cl, "--millis is only for --evaluator sleep");
      }
      if (serve && evaluator != Kind.exec) {
        throw new ParameterException(cl, "--serve is only for --evaluator exec");
      }
      if (cmd != null && evaluator != Kind.exec) {
        throw new ParameterException(cl, "--cmd is only for --evaluator exec");
      }
      if (failFast != null) {
        try {
          options.put(EvaluatorSpec.FAIL_FAST_OPTION, EvaluatorSpec.failFastOption(failFast));
        } catch (IllegalArgumentException e) {
          throw new ParameterException(cl, e.getMessage());
        }
      }
      try {
        EvaluatorSpec.checkCaseTimeout(caseTimeout);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(cl, "--case-timeout " + e.getMessage());
      }
      if (!scorers.isEmpty()) {
        try {
          // Files are read here, once: the specs travel whole to workers that may be on other machines.
          List<String> inlined = Scorers.withFilesInlined(scorers, path -> Files.readString(Path.of(path)));
          options.put(Scorers.OPTION, Scorers.optionValue(inlined));
        } catch (IllegalArgumentException e) {
          throw new ParameterException(cl, "--scorer: " + e.getMessage());
        }
      }
      return new EvaluatorSpec(evaluator.name(), options, caseTimeout);
    }

    /** The model options typed, by option, as the options map holds them. */
    private Map<ModelSettings.Option, String> modelOptions() {
      Map<ModelSettings.Option, String> given = new LinkedHashMap<>();
      given.put(ModelSettings.Option.BASE_URL, baseUrl);
      given.put(ModelSettings.Option.MODEL, model);
      given.put(ModelSettings.Option.API_KEY_ENV, apiKeyEnv);
      given.put(ModelSettings.Option.PROMPT, prompt);
      given.put(ModelSettings.Option.SYSTEM, system);
      given.put(ModelSettings.Option.TEMPERATURE, temperature);
      given.put(ModelSettings.Option.MAX_COMPLETION_TOKENS, maxCompletionTokens);
      given.put(ModelSettings.Option.STOP, stop.isEmpty() ? null : ModelSettings.stopValue(stop));
      given.put(ModelSettings.Option.SEED, modelSeed);
      given.put(ModelSettings.Option.REQUEST_TIMEOUT, modelRequestTimeout);
      given.put(ModelSettings.Option.PRICE, price);
      given.put(ModelSettings.Option.MAX_CONCURRENCY, maxConcurrency);
      given.put(ModelSettings.Option.REQUESTS_PER_MINUTE, requestsPerMinute);
      given.put(ModelSettings.Option.TOKENS_PER_MINUTE, tokensPerMinute);
      given.put(ModelSettings.Option.MAX_TOKENS, maxTokens);
      given.put(ModelSettings.Option.MAX_COST, maxCost);
      given.values().removeIf(java.util.Objects::isNull);
      return given;
    }

    /**
     * What the evaluator needs of every case, checked before anything is submitted: the fields of exec's
     * {@code --cmd} or of the model's {@code --prompt} ({@link CaseFields#of}); empty when it needs none.
     *
     * @throws ParameterException naming --cmd if its template is refused
     */
    static Optional<CaseFields> caseFields(EvaluatorSpec spec, picocli.CommandLine cl) {
      template(spec, cl); // --cmd's own refusal, named as such
      return CaseFields.of(spec);
    }

    /** The flag whose template names {@code fields}, for messages: {@code --cmd} or {@code --prompt}. */
    static String flag(CaseFields fields) {
      return "--" + fields.option();
    }

    /**
     * The exec command's template, parsed by the worker's own grammar (what it will run is what is
     * checked), or null for an evaluator without one.
     *
     * @throws ParameterException naming --cmd if the template is refused
     */
    static CommandTemplate template(EvaluatorSpec spec, picocli.CommandLine cl) {
      String cmd = spec.options().get("cmd");
      if (cmd == null) {
        return null;
      }
      try {
        return CommandTemplate.parse(cmd);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(cl, "--cmd: " + e.getMessage());
      }
    }
  }
}
