package dev.tally.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.core.store.StoreException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code --db} grammar ({@link StoreLocation}) and where a PostgreSQL password comes from ({@link PostgresPassword}). */
class StoreLocationTest {

  @TempDir Path dir;

  @Test
  void aPathIsASqliteFile() {
    assertThat(StoreLocation.parse("runs/tally.db")).isEqualTo(new StoreLocation.SqliteFile(Path.of("runs/tally.db")));
    assertThat(StoreLocation.parse("/tmp/x:y.db")).isInstanceOf(StoreLocation.SqliteFile.class);
  }

  @Test
  void aPostgresqlUrlIsADatabaseWithItsDefaults() {
    assertThat(StoreLocation.parse("postgresql://db.example:6543/evals?user=tally"))
        .isEqualTo(new StoreLocation.Postgres("db.example", 6543, "evals", "tally", null));
    assertThat(StoreLocation.parse("postgres://tally@db.example/evals?sslmode=verify-full"))
        .isEqualTo(new StoreLocation.Postgres("db.example", 5432, "evals", "tally", "verify-full"));
    StoreLocation.Postgres v6 = (StoreLocation.Postgres) StoreLocation.parse("postgresql://[::1]:5433/t");
    assertThat(v6.host()).isEqualTo("::1");
    assertThat(v6.user()).isNull();
    assertThat(v6.jdbcUrl()).isEqualTo("jdbc:postgresql://[::1]:5433/t");
    assertThat(v6.describe()).isEqualTo("postgresql://[::1]:5433/t");
  }

  @Test
  void aPasswordInTheUrlIsRefusedWithoutRepeatingItAndNamingWhereItGoes() {
    for (String url : List.of("postgresql://tally:s3cret@db/evals", "postgresql://db/evals?user=tally&password=s3cret")) {
      assertThatThrownBy(() -> StoreLocation.parse(url)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("--db").hasMessageContaining("password").hasMessageContaining("PGPASSWORD")
          .hasMessageContaining("--db-password-file").hasMessageNotContaining("s3cret");
    }
  }

  @Test
  void refusesWhatIsNeitherAFileNorAUsablePostgresqlUrl() {
    assertThatThrownBy(() -> StoreLocation.parse("")).hasMessageContaining("--db");
    assertThatThrownBy(() -> StoreLocation.parse("jdbc:postgresql://db/evals")).hasMessageContaining("JDBC URL");
    assertThatThrownBy(() -> StoreLocation.parse("mysql://db/evals")).hasMessageContaining("mysql://");
    assertThatThrownBy(() -> StoreLocation.parse("postgresql:///evals")).hasMessageContaining("no host");
    assertThatThrownBy(() -> StoreLocation.parse("postgresql://db")).hasMessageContaining("database");
    assertThatThrownBy(() -> StoreLocation.parse("postgresql://db/evals?ssl=true")).hasMessageContaining("'ssl'");
  }

  @Test
  void thePasswordComesFromTheFileThenPgpasswordThenPgpassfile() throws Exception {
    StoreLocation.Postgres db = new StoreLocation.Postgres("db", 5432, "evals", "tally", null);
    Path file = Files.writeString(dir.resolve("pw"), "from-file\nignored\n");
    Path passFile = Files.writeString(dir.resolve("pgpass"),
        "# comment\nother:5432:evals:tally:wrong\ndb:*:evals:tally:from\\:pgpass\n*:*:*:*:fallback\n");
    Map<String, String> env = Map.of("PGPASSWORD", "from-env", "PGPASSFILE", passFile.toString());
    assertThat(PostgresPassword.find(db, file, env)).isEqualTo("from-file");
    assertThat(PostgresPassword.find(db, null, env)).isEqualTo("from-env");
    assertThat(PostgresPassword.find(db, null, Map.of("PGPASSFILE", passFile.toString()))).isEqualTo("from:pgpass");
    assertThat(PostgresPassword.find(db, null, Map.of())).isNull();
    assertThatThrownBy(() -> PostgresPassword.find(db, dir.resolve("missing"), env)).isInstanceOf(StoreException.class)
        .hasMessageContaining("--db-password-file");
  }

  @Test
  void aPasswordFileForASqliteFileIsRefusedBeforeTheFileIsCreated() {
    Path db = dir.resolve("t.db");
    Stores.Options options = Stores.Options.defaults().withPasswordFile(dir.resolve("pg-password"));
    StoreLocation location = StoreLocation.parse(db.toString());

    assertThatThrownBy(() -> Stores.open(location, options)).isInstanceOf(StoreException.class)
        .hasMessageContaining("--db-password-file is for a PostgreSQL --db").hasMessageContaining(db.toString());
    assertThatThrownBy(() -> Stores.openExisting(location, options)).isInstanceOf(StoreException.class)
        .hasMessageContaining("--db-password-file");
    assertThat(db).doesNotExist();
  }
}
