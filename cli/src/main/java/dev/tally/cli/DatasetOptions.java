package dev.tally.cli;

import dev.tally.datasets.CsvTypes;
import dev.tally.datasets.DatasetFormat;
import dev.tally.datasets.ReadOptions;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * How a dataset file is read, shared by {@code tally run} and {@code tally submit}: its format and which of
 * its cases to take. Only the parsing is here; the rules (formats, detection, ids, sample, epochs) are the
 * {@code datasets} module's ({@link ReadOptions}, {@link DatasetFormat}, {@link CsvTypes}).
 *
 * <p>Thread-safety: filled by picocli, then read by the command's thread.
 */
public final class DatasetOptions {
  @Spec(Spec.Target.MIXEE) CommandSpec mixee;

  @Option(names = "--format", paramLabel = "FORMAT",
      description = "The dataset's format, when its name and first record do not say it (or say two): jsonl, json, csv, yaml,"
          + " openai-evals, inspect or promptfoo (default: from the file's extension and first record).")
  String format;

  @Option(names = "--csv-types", paramLabel = "COL:TYPE,...",
      description = "CSV: the columns that are not strings, each int, float, bool or json (e.g. answer:int,meta:json).")
  String csvTypes;

  @Option(names = "--limit", paramLabel = "N", description = "Run only the first N cases of the dataset.")
  Integer limit;

  @Option(names = "--sample", paramLabel = "N",
      description = "Run N cases chosen by --seed: the same N for the same seed, whatever the file's order.")
  Integer sample;

  @Option(names = "--seed", paramLabel = "S", description = "The seed of --sample (default: 0).")
  Long seed;

  @Option(names = "--epochs", paramLabel = "K",
      description = "Run each case K times, as K cases with ids ID#1..ID#K and the fields epoch and sampleId.")
  Integer epochs;

  /**
   * The options as the {@code datasets} module takes them.
   *
   * @throws ParameterException naming the option whose value it refuses
   */
  ReadOptions readOptions() {
    if (seed != null && sample == null) {
      throw new ParameterException(mixee.commandLine(), "--seed is the seed of --sample; give --sample N too");
    }
    if (format != null && !DatasetFormat.optionNames().contains(format)) {
      throw new ParameterException(mixee.commandLine(), "--format: unknown format \"" + format + "\"; the formats are "
          + String.join(", ", DatasetFormat.optionNames()));
    }
    try {
      CsvTypes types = csvTypes == null ? CsvTypes.NONE : CsvTypes.parse(csvTypes);
      return new ReadOptions(format, types, limit, sample, seed == null ? 0 : seed, epochs);
    } catch (IllegalArgumentException e) {
      String message = e.getMessage();
      throw new ParameterException(mixee.commandLine(), message.startsWith("--") ? message : "--csv-types: " + message);
    }
  }
}
