package dev.tally.datasets;

import dev.tally.core.cases.Epochs;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.tally.core.CaseRecord;
import dev.tally.core.cases.CaseLines;
import dev.tally.core.cases.CaseSource;
import dev.tally.core.cases.CaseSourceException;
import dev.tally.datasets.DatasetFormat.Shape;
import dev.tally.datasets.DatasetFormat.Syntax;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import org.yaml.snakeyaml.LoaderOptions;

/**
 * A dataset file read as a {@link CaseSource}: records cut out by the file's syntax, each mapped onto a case
 * by its shape ({@link CaseShapes}), given an id from its content if it has none ({@link CaseIds}; a given
 * id must pass {@link CaseLines#idProblem}), then the selection of {@link ReadOptions} (first N, a seeded
 * sample, epochs). Cases are pulled one at a time; JSON Lines, JSON and CSV are streamed, so memory holds one
 * record (and a sample's N ranks), whatever the file's size.
 *
 * <p>A case read as it is (JSON Lines, plain shape, with an id, no epochs) keeps its line's text byte for
 * byte; every other case is written as compact JSON with its {@code id} first. Every case, once written, is a
 * valid case line ({@link CaseLines#MAX_LINE_BYTES} included), so what this reads can be sent as JSON Lines.
 *
 * <p>Errors name the file and the line the record starts on, and for a CSV file its row; and the field at
 * fault ({@code cases.csv line 4: row 3: column "n": "x" is not an int}). A sample reads the file twice (the
 * first pass ranks every case), so the file must not change meanwhile.
 *
 * <p>Thread-safety: none; pulled by one thread. Close it to release the file.
 */
public final class DatasetReader implements CaseSource, Closeable {
  /**
   * The most a YAML file may hold, in code points (SnakeYAML's own bound, which it applies to the whole
   * document): YAML test files are written by hand, and a larger dataset belongs in JSON Lines or CSV, which
   * stream.
   */
  public static final int MAX_YAML_CODE_POINTS = 64 << 20;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonFactory JSON_FACTORY = new JsonFactory();

  private final Path file;
  private final String name;
  private final ReadOptions options;
  private final Syntax syntax;
  private final Shape forcedShape;
  private final BitSet chosen;
  private Pass pass;
  private int[] lines = new int[64];
  private int position;
  /** The case whose epochs are being handed out, or null. */
  private Pass.Case current;
  private int epoch;
  private int taken;

  private DatasetReader(Path file, ReadOptions options, Syntax syntax, Shape forcedShape, BitSet chosen) throws CaseSourceException {
    this.file = file;
    this.name = file.toString();
    this.options = options;
    this.syntax = syntax;
    this.forcedShape = forcedShape;
    this.chosen = chosen;
    this.pass = new Pass();
  }

  /**
   * Opens a dataset.
   *
   * @param file the dataset file
   * @param options its format (or null to detect it), CSV types and selection
   * @return a source of its cases, in dataset order; with a sample, the sample's cases in dataset order
   * @throws CaseSourceException naming the file: its format cannot be told from its name and none was given
   *     ({@code --format}), the forced format is unknown, the file cannot be read, or (with a sample, which
   *     reads the whole file first) any record is bad
   */
  public static DatasetReader open(Path file, ReadOptions options) throws CaseSourceException {
    Syntax syntax;
    Shape shape = null;
    if (options.format() != null) {
      DatasetFormat forced;
      try {
        forced = DatasetFormat.forced(options.format(), file);
      } catch (IllegalArgumentException e) {
        throw new CaseSourceException(file.toString(), 0, e.getMessage());
      }
      syntax = forced.syntax();
      shape = forced.shape();
    } else {
      syntax = Syntax.ofFile(file).orElseThrow(() -> new CaseSourceException(file.toString(), 0,
          "cannot tell the format from the file's name (.jsonl, .ndjson, .json, .csv, .yaml, .yml); give --format, one of "
              + String.join(", ", DatasetFormat.optionNames())));
    }
    if (!options.csvTypes().isEmpty() && syntax != Syntax.CSV) {
      throw new CaseSourceException(file.toString(), 0, "--csv-types is for CSV files; this one is read as " + syntax.optionName());
    }
    BitSet chosen = null;
    if (options.sample() != null) {
      chosen = sample(file, options, syntax, shape);
    }
    return new DatasetReader(file, options, syntax, shape, chosen);
  }

  /** The first pass of a sample: the indices of the cases of smallest rank. */
  private static BitSet sample(Path file, ReadOptions options, Syntax syntax, Shape shape) throws CaseSourceException {
    int n = options.sample();
    // The largest rank kept is at the head, to be dropped when a smaller one comes.
    PriorityQueue<long[]> kept = new PriorityQueue<>((a, b) -> {
      int c = Long.compareUnsigned(b[0], a[0]);
      return c != 0 ? c : Long.compare(b[1], a[1]);
    });
    ReadOptions everyCase = new ReadOptions(null, options.csvTypes(), null, null, 0, null);
    try (DatasetReader all = new DatasetReader(file, everyCase, syntax, shape, null)) {
      for (Pass.Case c; (c = all.pass.next()) != null; ) {
        kept.add(new long[] {CaseIds.sampleRank(options.seed(), c.id), c.index});
        if (kept.size() > n) {
          kept.poll();
        }
      }
    } catch (IOException e) {
      throw new CaseSourceException(file.toString(), 0, CaseSourceException.cannotRead(e));
    }
    BitSet chosen = new BitSet();
    for (long[] k : kept) {
      chosen.set((int) k[1]);
    }
    return chosen;
  }

  /** The format the file is read as: forced, or detected from its name and first record. */
  public DatasetFormat format() throws CaseSourceException {
    return new DatasetFormat(syntax, pass.shape());
  }

  @Override
  public CaseRecord next() throws CaseSourceException {
    while (true) {
      if (current != null) {
        if (options.epochs() == null) {
          Pass.Case c = current;
          current = null;
          return emit(c, c.id, c.json());
        }
        if (epoch < options.epochs()) {
          epoch++;
          return emit(current, current.id + "#" + epoch, current.epochJson(epoch));
        }
        current = null;
      }
      if (options.limit() != null && taken >= options.limit()) {
        return null;
      }
      Pass.Case c = pass.next();
      if (c == null) {
        return null;
      }
      if (chosen != null && !chosen.get(c.index)) {
        continue;
      }
      taken++;
      if (options.epochs() != null) {
        for (String field : new String[] {Epochs.EPOCH_FIELD, Epochs.SAMPLE_ID_FIELD}) {
          if (c.object.has(field)) {
            throw pass.refuse(c.record, new RecordProblem(field, "the case already has it, and --epochs sets it"
                + " (epoch: the 1-based epoch; sampleId: the case's id)"));
          }
        }
      }
      current = c;
      epoch = 0;
    }
  }

  private CaseRecord emit(Pass.Case c, String id, String json) throws CaseSourceException {
    Optional<String> problem = CaseLines.idProblem(JsonNodeFactory.instance.textNode(id))
        .or(() -> CaseLines.numberProblem(c.object));
    if (problem.isPresent()) {
      throw pass.refuse(c.record, new RecordProblem(null, problem.get()));
    }
    int bytes = json.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > CaseLines.MAX_LINE_BYTES) {
      throw pass.refuse(c.record, new RecordProblem(null, "the case is " + bytes + " bytes as JSON; the limit of a case is "
          + CaseLines.MAX_LINE_BYTES + " bytes"));
    }
    if (position == lines.length) {
      lines = Arrays.copyOf(lines, lines.length * 2);
    }
    lines[position] = c.record.line();
    return new CaseRecord(position++, id, json);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int lineOf(int position) {
    return position >= 0 && position < this.position ? lines[position] : 0;
  }

  @Override
  public void close() throws IOException {
    pass.close();
  }

  /** One read of the file: records to cases with ids, in file order. */
  private final class Pass implements Closeable {
    /** A case with its id, before the selection. */
    final class Case {
      final RawRecord record;
      final int index;
      final String id;
      final ObjectNode object;
      /** The text to keep as it is, or null to write the object. */
      final String text;

      Case(RawRecord record, int index, String id, ObjectNode object, String text) {
        this.record = record;
        this.index = index;
        this.id = id;
        this.object = object;
        this.text = text;
      }

      String json() {
        return text != null ? text : write(object);
      }

      String epochJson(int k) {
        ObjectNode copy = object.deepCopy();
        copy.put("id", Epochs.caseId(id, k));
        copy.put(Epochs.EPOCH_FIELD, k);
        copy.put(Epochs.SAMPLE_ID_FIELD, id);
        return write(copy);
      }
    }

    private RecordStream records;
    private InputStream in;
    private Shape shape;
    private RawRecord first;
    private boolean firstTaken;
    private int index;
    private final CaseIds ids = new CaseIds();

    Pass() {
      this.shape = forcedShape;
    }

    private void openRecords() throws CaseSourceException {
      if (records != null) {
        return;
      }
      try {
        in = Files.newInputStream(file);
        switch (syntax) {
          case JSON_LINES:
            records = new JsonLinesRecords(in, name);
            break;
          case JSON:
            records = new TreeRecords(JSON_FACTORY, in, name);
            break;
          case YAML:
            LoaderOptions loader = new LoaderOptions();
            loader.setCodePointLimit(MAX_YAML_CODE_POINTS);
            records = new TreeRecords(YAMLFactory.builder().loaderOptions(loader).build(), in, name);
            break;
          case CSV:
            records = new CsvRecords(in, name, options.csvTypes());
            break;
          default:
            throw new AssertionError(syntax);
        }
      } catch (IOException e) {
        throw new CaseSourceException(name, 0, CaseSourceException.cannotRead(e));
      }
    }

    /** The shape: forced, or the first record's (read now if need be; a file without records is plain). */
    Shape shape() throws CaseSourceException {
      if (shape == null) {
        openRecords();
        first = records.next();
        if (first == null) {
          shape = Shape.PLAIN;
        } else {
          try {
            shape = DatasetFormat.detectShape(first.object(), syntax == Syntax.CSV);
          } catch (IllegalArgumentException e) {
            throw new CaseSourceException(name, first.line(), first.rowPrefix() + e.getMessage());
          }
        }
      }
      return shape;
    }

    Case next() throws CaseSourceException {
      Shape s = shape();
      openRecords();
      RawRecord r;
      if (first != null && !firstTaken) {
        firstTaken = true;
        r = first;
      } else {
        r = records.next();
      }
      if (r == null) {
        return null;
      }
      ObjectNode c;
      try {
        c = CaseShapes.toCase(s, r.object(), syntax == Syntax.CSV);
      } catch (RecordProblem p) {
        throw refuse(r, p);
      }
      JsonNode given = c.get("id");
      String id;
      String text = null;
      if (given == null) {
        id = ids.next(c);
        ObjectNode withId = JsonNodeFactory.instance.objectNode();
        withId.put("id", id);
        for (Iterator<Map.Entry<String, JsonNode>> it = c.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          withId.set(e.getKey(), e.getValue());
        }
        c = withId;
      } else {
        Optional<String> problem = CaseLines.idProblem(given);
        if (problem.isPresent()) {
          throw refuse(r, new RecordProblem(null, problem.get()));
        }
        id = given.textValue();
        if (s == Shape.PLAIN && r.text() != null) {
          text = r.text();
        }
      }
      return new Case(r, index++, id, c, text);
    }

    CaseSourceException refuse(RawRecord r, RecordProblem p) {
      return new CaseSourceException(name, r.line(), r.rowPrefix() + p.describe());
    }

    @Override
    public void close() throws IOException {
      if (records != null) {
        records.close();
      } else if (in != null) {
        in.close();
      }
    }
  }

  private static String write(ObjectNode node) {
    try {
      return JSON.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a tree of JSON nodes always writes", e);
    }
  }
}
