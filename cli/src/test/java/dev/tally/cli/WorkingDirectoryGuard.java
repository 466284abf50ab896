package dev.tally.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class that wrote into the working directory (the module's own folder under Maven): tests
 * write only under {@code target/} or a temporary folder, and a {@code tally run} without {@code --out}
 * and {@code --summary} writes {@code results.jsonl} and {@code summary.json} right there, where {@code
 * ./mvnw verify} once left them as changes to tracked files. Registered for every test class of this
 * module by JUnit's extension auto-detection ({@code junit-platform.properties}).
 *
 * <p>Thread-safety: test classes run one at a time in this module; the snapshot lives in the class's
 * extension store.
 */
public final class WorkingDirectoryGuard implements BeforeAllCallback, AfterAllCallback {
  private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(WorkingDirectoryGuard.class);

  @Override
  public void beforeAll(ExtensionContext context) throws IOException {
    context.getStore(NAMESPACE).put("before", snapshot());
  }

  @Override
  public void afterAll(ExtensionContext context) throws IOException {
    @SuppressWarnings("unchecked")
    Map<String, String> before = context.getStore(NAMESPACE).get("before", Map.class);
    Map<String, String> after = snapshot();
    assertThat(after)
        .as("%s wrote into the working directory %s: write under target/ or a @TempDir (e.g. give tally run --out and --summary)",
            context.getDisplayName(), Path.of("").toAbsolutePath())
        .isEqualTo(before);
  }

  /** Each entry of the working directory but {@code target/}, with its size and modification time. */
  private static Map<String, String> snapshot() throws IOException {
    Map<String, String> entries = new TreeMap<>();
    try (Stream<Path> list = Files.list(Path.of("").toAbsolutePath())) {
      for (Path p : (Iterable<Path>) list::iterator) {
        String name = p.getFileName().toString();
        if (!name.equals("target")) {
          entries.put(name, Files.size(p) + " bytes, modified " + Files.getLastModifiedTime(p));
        }
      }
    }
    return entries;
  }
}
