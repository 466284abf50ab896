package dev.tally.cli.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.cli.DatasetException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A dataset as a submission's body: checked by the case grammar before anything is sent (naming the file
 * and line), sent as the run's fields then the file's bytes, and never sent whole if it changed since.
 */
class DatasetUploadTest {
  private static final String FIELDS = "{\"evaluator\":{\"kind\":\"noop\"}}";

  @TempDir Path dir;

  private DatasetUpload check(Path file) throws DatasetException {
    return DatasetUpload.check(file, FIELDS, node -> Optional.empty(), "--cmd");
  }

  @Test
  void theBodyIsTheFieldsLineThenTheFileAsItIsWithoutAByteOrderMark() throws Exception {
    byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    byte[] cases = "{\"id\":\"a\"}\r\n\n{\"id\":\"b\",\"x\":1}".getBytes(StandardCharsets.UTF_8);
    Path file = dir.resolve("cases.jsonl");
    Files.write(file, concat(bom, cases));
    DatasetUpload upload = check(file);
    assertThat(upload.cases()).isEqualTo(2);
    byte[] body;
    try (InputStream in = upload.open()) {
      body = in.readAllBytes();
    }
    assertThat(new String(body, StandardCharsets.UTF_8)).isEqualTo(FIELDS + "\n" + new String(cases, StandardCharsets.UTF_8));
    assertThat(upload.contentLength()).isEqualTo(body.length);
  }

  @Test
  void aBadLineIsRefusedWithTheFileAndLineBeforeAnythingIsSent() throws Exception {
    Path file = Files.writeString(dir.resolve("cases.jsonl"), "{\"id\":\"a\"}\n\n{\"name\":\"no id\"}\n");
    assertThatThrownBy(() -> check(file)).isInstanceOf(DatasetException.class)
        .hasMessage(file + ":3: case has no \"id\" field");
  }

  @Test
  void aCaseWithoutAFieldTheTemplateUsesIsRefusedNamingIt() throws Exception {
    Path file = Files.writeString(dir.resolve("cases.jsonl"), "{\"id\":\"a\",\"script\":\"true\"}\n{\"id\":\"b\"}\n");
    assertThatThrownBy(() -> DatasetUpload.check(file, FIELDS,
        node -> node.has("script") ? Optional.empty() : Optional.of("script"), "--cmd"))
        .hasMessage(file + ":2: case \"b\" has no field \"script\", which --cmd uses");
  }

  @Test
  void anEmptyDatasetIsRefused() throws Exception {
    Path file = Files.writeString(dir.resolve("cases.jsonl"), "\n  \n");
    assertThatThrownBy(() -> check(file)).hasMessageContaining("dataset has no cases");
  }

  @Test
  void aFileChangedAfterTheCheckFailsTheBodyBeforeItsLastByte() throws Exception {
    Path file = Files.writeString(dir.resolve("cases.jsonl"), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
    DatasetUpload upload = check(file);
    Files.writeString(file, "{\"id\":\"a\"}\n{\"id\":\"c\"}\n"); // same length, other content
    byte[] buf = new byte[4096];
    long sent = 0;
    try (InputStream in = upload.open()) {
      IOException failure = null;
      try {
        for (int n; (n = in.read(buf)) >= 0; ) {
          sent += n;
        }
      } catch (IOException e) {
        failure = e;
      }
      assertThat(failure).isInstanceOf(ApiClient.BodyFailure.class).hasMessageContaining("changed while it was being sent");
    }
    assertThat(sent).isLessThan(upload.contentLength());
    Files.writeString(file, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n"); // longer
    try (InputStream in = upload.open()) {
      assertThatThrownBy(in::readAllBytes).isInstanceOf(ApiClient.BodyFailure.class);
    }
  }

  @Test
  void aBodyLineIsTheDatasetLineAfterIt() {
    assertThat(DatasetUpload.datasetLine(9)).isEqualTo(8);
    assertThat(DatasetUpload.datasetLine(1)).isZero();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
