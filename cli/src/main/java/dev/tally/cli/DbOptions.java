package dev.tally.cli;

import dev.tally.store.PostgresPassword;
import dev.tally.store.StoreLocation;
import dev.tally.store.Stores;
import java.nio.file.Path;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.TypeConversionException;

/**
 * What every command that takes {@code --db} shares: the value's grammar (its owner is
 * {@link StoreLocation#parse}; {@link Converter} hands it to picocli), {@code --db-password-file}, and
 * where a store's side files go. A command declares {@code --db} itself (its default and description
 * differ) with {@code converter = DbOptions.Converter.class}, and mixes these options in.
 *
 * <p>Thread-safety: filled by picocli on the command's thread, then read-only.
 */
public final class DbOptions {

  /** The grammar's words for a command's help. */
  public static final String GRAMMAR = "a SQLite file, or postgresql://HOST:PORT/DATABASE?user=USER (its password from"
      + " PGPASSWORD, --db-password-file or PGPASSFILE; never in the URL)";

  @Option(names = PostgresPassword.FILE_OPTION, paramLabel = "FILE",
      description = "PostgreSQL: a file whose first line is the password of --db's user (else PGPASSWORD, else PGPASSFILE).")
  Path passwordFile;

  /** {@code --db-password-file}, or null: for a command that hands it on to the processes it starts. */
  public Path passwordFile() {
    return passwordFile;
  }

  /** Parses {@code --db} with {@link StoreLocation#parse}, its message as picocli's. */
  public static final class Converter implements ITypeConverter<StoreLocation> {
    @Override
    public StoreLocation convert(String value) {
      try {
        return StoreLocation.parse(value);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
    }
  }

  /** The command these options are mixed into, for its errors. */
  @picocli.CommandLine.Spec(picocli.CommandLine.Spec.Target.MIXEE)
  picocli.CommandLine.Model.CommandSpec mixee;

  /**
   * How to open the store at {@code db}: the system clock, the password file if given, this process's
   * environment.
   *
   * @throws picocli.CommandLine.ParameterException if they do not fit {@code db} ({@link
   *     Stores.Options#requireFitFor}: a password file for a SQLite file)
   */
  public Stores.Options storeOptions(StoreLocation db) {
    Stores.Options options = Stores.Options.defaults().withPasswordFile(passwordFile);
    try {
      options.requireFitFor(db);
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(mixee.commandLine(), e.getMessage());
    }
    return options;
  }

  /**
   * The path the store's side files (worker logs, API uploads) are named after and put beside: the
   * SQLite file itself ({@code tally.db-logs/}), or for a PostgreSQL database its name in the working
   * directory ({@code evals-logs/}).
   */
  static Path besideStore(StoreLocation location) {
    return location instanceof StoreLocation.SqliteFile f ? f.file() : Path.of(((StoreLocation.Postgres) location).database());
  }
}
