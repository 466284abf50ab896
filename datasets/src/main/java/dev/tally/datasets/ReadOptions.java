package dev.tally.datasets;

import java.util.Objects;

/**
 * How to read a dataset: its format (forced, or detected when null), the types of its CSV columns, and which
 * cases to take: the first {@code limit}, a seeded {@code sample}, each case {@code epochs} times. The one
 * owner of these options' rules; the command line only parses them.
 *
 * <ul>
 *   <li>{@code limit N}: the first N cases of the file.
 *   <li>{@code sample N} with {@code seed S}: the N cases whose rank {@link CaseIds#sampleRank}(S, id) is
 *       smallest, in dataset order: the same cases for the same seed whatever the file's order. Not with
 *       {@code limit} (which of the two would come first is a guess a user should not have to make).
 *   <li>{@code epochs K}: each case K times, as K jobs with ids {@code ID#1}..{@code ID#K} and the fields
 *       {@code epoch} (1-based) and {@code sampleId} (the case's id); a case that already has either field is
 *       refused. Without it, cases are read as they are.
 * </ul>
 *
 * @param format the name {@code --format} was given ({@link DatasetFormat#forced}), or null to detect
 * @param csvTypes the typed CSV columns ({@link CsvTypes#NONE} for none)
 * @param limit how many cases to take from the start, or null for all
 * @param sample how many cases to sample, or null for no sampling
 * @param seed the sample's seed (used only with {@code sample})
 * @param epochs how many times to run each case, or null for once, as read
 */
public record ReadOptions(String format, CsvTypes csvTypes, Integer limit, Integer sample, long seed, Integer epochs) {
  /**
   * The most epochs: each is a job per case, so 1,000 already makes a run a thousand times its dataset;
   * more is a bigger dataset, not more epochs (and pass@k needs k at most the epochs).
   */
  public static final int MAX_EPOCHS = 1_000;

  /** Every case, once, in a format detected from the file. */
  public static final ReadOptions DEFAULT = new ReadOptions(null, CsvTypes.NONE, null, null, 0, null);

  /**
   * @throws IllegalArgumentException naming the option: a limit or sample below 1, epochs outside 1 to
   *     {@link #MAX_EPOCHS}, or a limit and a sample together
   */
  public ReadOptions {
    Objects.requireNonNull(csvTypes, "csvTypes");
    if (limit != null && limit < 1) {
      throw new IllegalArgumentException("--limit must be at least 1, got " + limit);
    }
    if (sample != null && sample < 1) {
      throw new IllegalArgumentException("--sample must be at least 1, got " + sample);
    }
    if (limit != null && sample != null) {
      throw new IllegalArgumentException("--limit and --sample do not go together: --sample N takes N cases already");
    }
    if (epochs != null && (epochs < 1 || epochs > MAX_EPOCHS)) {
      throw new IllegalArgumentException("--epochs must be from 1 to " + MAX_EPOCHS + ", got " + epochs);
    }
  }

  /** Whether these options take every case as it is read (no limit, sample or epochs). */
  public boolean takesEveryCaseAsRead() {
    return limit == null && sample == null && epochs == null;
  }
}
