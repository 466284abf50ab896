package dev.tally.cli.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.openqa.selenium.bidi.BiDi;
import org.openqa.selenium.bidi.Command;
import org.openqa.selenium.bidi.Connection;
import org.openqa.selenium.bidi.Event;
import org.openqa.selenium.remote.http.ClientConfig;
import org.openqa.selenium.remote.http.HttpClient;

/**
 * A headless Firefox (Debian's {@code firefox-esr}, which {@code .ci/run} installs) driven over WebDriver
 * BiDi, which Firefox's Remote Agent speaks itself, so no geckodriver is needed (Debian packages none).
 * Selenium's BiDi transport ({@link Connection}, {@link BiDi}) does the WebSocket, the JSON and the
 * matching of replies to commands; this class only names the commands the dashboard tests use.
 *
 * <p>Protocol: W3C WebDriver BiDi (https://w3c.github.io/webdriver-bidi/): a BiDi-only session made with
 * {@code session.new} over {@code ws://127.0.0.1:PORT/session}; one top-level browsing context, at the
 * Chromium tests' laptop viewport ({@link Browser#WIDTH} x {@link Browser#HEIGHT}); {@code log.entryAdded} collected from the
 * start, so {@link #consoleErrors} sees every error the page logs or throws. Screenshots go to
 * {@link Browser#SCREENSHOTS} as {@code firefox-NAME.png}. Firefox's own output stays beside its profile
 * ({@code target/firefox-profiles/ID-firefox.log}) for when it fails to start; the profile is deleted.
 *
 * <p>Thread-safety: one test thread drives it; console entries arrive on the transport's thread and are
 * kept in a concurrent list.
 */
final class Firefox implements AutoCloseable {
  static final Path FIREFOX = Path.of("/usr/bin/firefox-esr");
  /** Firefox's start (a fresh profile) on a loaded 2-core machine takes seconds; this is the margin. */
  static final Duration START_PATIENCE = Duration.ofSeconds(60);
  /** Longest a single BiDi command may take (a navigation waits for the page's load). */
  static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(60);
  /** What Firefox's Remote Agent prints on stderr once its WebSocket listens. */
  private static final Pattern LISTENING = Pattern.compile("WebDriver BiDi listening on (ws://\\S+)");
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Process process;
  private final Path profile;
  private final Path log;
  private final Connection connection;
  private final BiDi bidi;
  private final String context;
  private final List<Map<String, Object>> consoleEntries = new CopyOnWriteArrayList<>();

  /**
   * Starts Firefox with a fresh profile under {@code target/firefox-profiles/}, opens a BiDi session and
   * subscribes to the console.
   *
   * @throws AssertionError if {@code firefox-esr} is not installed, or Firefox does not listen within
   *     {@link #START_PATIENCE}
   */
  Firefox() throws IOException {
    assertThat(FIREFOX).as("the Firefox dashboard tests need Debian's firefox-esr (apt-get install firefox-esr, as .ci/run does)")
        .isExecutable();
    profile = Files.createDirectories(Path.of("target", "firefox-profiles", UUID.randomUUID().toString())).toAbsolutePath();
    // A fresh profile asks nothing; these only keep it from reaching out to Mozilla's services meanwhile.
    Files.writeString(profile.resolve("user.js"), String.join("\n",
        "user_pref(\"browser.shell.checkDefaultBrowser\", false);",
        "user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);",
        "user_pref(\"toolkit.telemetry.enabled\", false);",
        "user_pref(\"app.update.disabledForTesting\", true);",
        "user_pref(\"browser.region.network.url\", \"\");",
        "user_pref(\"services.settings.server\", \"http://127.0.0.1:9/\");",
        ""));
    log = profile.resolveSibling(profile.getFileName() + "-firefox.log");
    process = new ProcessBuilder(FIREFOX.toString(), "--headless", "--no-remote", "--remote-debugging-port=" + freePort(),
        "--profile", profile.toString(), "about:blank")
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      String ws = awaitListening();
      HttpClient client = HttpClient.Factory.createDefault().createClient(ClientConfig.defaultConfig().baseUri(URI.create(ws)));
      connection = new Connection(client, ws + "/session");
      bidi = new BiDi(connection, COMMAND_TIMEOUT);
      send("session.new", Map.of("capabilities", Map.of()));
      bidi.addListener(new Event<Map<String, Object>>("log.entryAdded", params -> params), consoleEntries::add);
      List<?> contexts = (List<?>) send("browsingContext.getTree", Map.of("maxDepth", 0)).get("contexts");
      context = (String) ((Map<?, ?>) contexts.get(0)).get("context");
      send("browsingContext.setViewport", Map.of("context", context, "viewport", Map.of("width", Browser.WIDTH, "height", Browser.HEIGHT)));
    } catch (RuntimeException | Error e) {
      kill();
      throw e;
    }
  }

  /** A port free now, for Firefox's Remote Agent (it cannot be told to choose one and say which). */
  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private String awaitListening() {
    String[] url = new String[1];
    await("Firefox's Remote Agent listening (its output is in " + log + ")").atMost(START_PATIENCE)
        .pollInterval(Duration.ofMillis(100)).until(() -> {
          Matcher m = LISTENING.matcher(output());
          if (m.find()) {
            url[0] = m.group(1);
            return true;
          }
          if (!process.isAlive()) {
            throw new AssertionError("firefox-esr exited before listening:\n" + output());
          }
          return false;
        });
    return url[0];
  }

  private String output() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no output: " + e.getMessage() + ")";
    }
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> send(String method, Map<String, Object> params) {
    return bidi.send(new Command<>(method, params, result -> (Map<String, Object>) result));
  }

  /** Loads {@code url} in the tab and waits for its load event (a change of the fragment only: none). */
  void navigate(String url) {
    send("browsingContext.navigate", Map.of("context", context, "url", url, "wait", "complete"));
  }

  /** Reloads the page and waits for its load event. */
  void reload() {
    send("browsingContext.reload", Map.of("context", context, "wait", "complete"));
  }

  /** The tab's address, as the browser has it. */
  String currentUrl() {
    return js("() => location.href").asText();
  }

  /**
   * Calls the JavaScript function {@code function} (its source, e.g. {@code "(css) => ..."}) in the page
   * with string {@code args} and answers its value (awaited if a promise) as JSON: through
   * {@code JSON.stringify} in the page, so the test reads plain JSON and not BiDi's remote values.
   *
   * @throws AssertionError if the function throws, with the page's message
   */
  JsonNode js(String function, String... args) {
    List<Map<String, Object>> arguments = new ArrayList<>();
    for (String a : args) {
      arguments.add(Map.of("type", "string", "value", a));
    }
    Map<String, Object> result = send("script.callFunction", Map.of(
        "functionDeclaration", "async function(...a) { const r = await (" + function + ")(...a);"
            + " return r === undefined ? 'null' : JSON.stringify(r); }",
        "arguments", arguments, "awaitPromise", true, "target", Map.of("context", context)));
    if (!"success".equals(result.get("type"))) {
      throw new AssertionError("script failed: " + function + ": " + result.get("exceptionDetails"));
    }
    try {
      return JSON.readTree((String) ((Map<?, ?>) result.get("result")).get("value"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The trimmed text of the first element {@code css} selects, or null if none. */
  String text(String css) {
    JsonNode t = js("(css) => { const e = document.querySelector(css); return e ? e.textContent.trim() : null; }", css);
    return t.isNull() ? null : t.asText();
  }

  /** How many elements {@code css} selects. */
  int count(String css) {
    return js("(css) => document.querySelectorAll(css).length", css).asInt();
  }

  /** Waits, polling every 100 ms, for {@code condition}, at most {@link Browser#PATIENCE}. */
  void until(String what, Callable<Boolean> condition) {
    await(what).atMost(Browser.PATIENCE).pollInterval(Duration.ofMillis(100)).until(condition);
  }

  /** A shared reference ({@code {sharedId}}) to the first element {@code css} selects. */
  private Map<String, Object> element(String css) {
    Map<String, Object> result = send("script.evaluate", Map.of("expression", "document.querySelector(" + quote(css) + ")",
        "awaitPromise", false, "target", Map.of("context", context)));
    Map<?, ?> value = (Map<?, ?>) result.get("result");
    if (value == null || !"node".equals(value.get("type"))) {
      throw new AssertionError("no element " + css + " on " + currentUrl());
    }
    return Map.of("sharedId", value.get("sharedId"));
  }

  private static String quote(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Clicks the middle of the element {@code css} selects with the mouse, {@code times} times in a row. */
  void click(String css, int times) {
    js("(css) => document.querySelector(css).scrollIntoView({ block: 'center' })", css);
    List<Map<String, Object>> actions = new ArrayList<>();
    actions.add(Map.of("type", "pointerMove", "x", 0, "y", 0, "origin", Map.of("type", "element", "element", element(css))));
    for (int i = 0; i < times; i++) {
      actions.add(Map.of("type", "pointerDown", "button", 0));
      actions.add(Map.of("type", "pointerUp", "button", 0));
    }
    send("input.performActions", Map.of("context", context, "actions", List.of(
        Map.of("type", "pointer", "id", "mouse", "parameters", Map.of("pointerType", "mouse"), "actions", actions))));
    send("input.releaseActions", Map.of("context", context));
  }

  /** Clicks the element {@code css} selects once. */
  void click(String css) {
    click(css, 1);
  }

  /** Focuses the element {@code css} selects and types {@code text} on the keyboard. */
  void type(String css, String text) {
    js("(css) => document.querySelector(css).focus()", css);
    List<Map<String, Object>> keys = new ArrayList<>();
    text.codePoints().forEach(c -> {
      String key = new String(Character.toChars(c));
      keys.add(Map.of("type", "keyDown", "value", key));
      keys.add(Map.of("type", "keyUp", "value", key));
    });
    send("input.performActions", Map.of("context", context, "actions", List.of(
        Map.of("type", "key", "id", "keyboard", "actions", keys))));
  }

  /** Chooses {@code file} in the file input {@code css} selects, as a user picking it would. */
  void chooseFile(String css, Path file) {
    send("input.setFiles", Map.of("context", context, "element", element(css), "files", List.of(file.toAbsolutePath().toString())));
  }

  /** Selects the option {@code value} of the select {@code css} selects and tells the page (a change event). */
  void select(String css, String value) {
    js("(css, v) => { const s = document.querySelector(css); s.value = v; s.dispatchEvent(new Event('change', { bubbles: true })); }",
        css, value);
  }

  /** Opens the dashboard at {@code url} and signs in by typing {@code token} in the form. */
  void signIn(String url, String token) {
    navigate(url);
    until("the sign-in form", () -> count("#token") == 1);
    type("#token", token);
    click("#login button[type=submit]");
    until("signed in", () -> count("#token") == 0 && count("main h1") > 0);
  }

  /**
   * Saves the whole page (at most {@link Browser#MAX_SCREENSHOT_HEIGHT} px tall) as
   * {@code target/dashboard-screenshots/firefox-NAME.png}.
   */
  Path screenshot(String name) throws IOException {
    Path dir = Files.createDirectories(Path.of(Browser.SCREENSHOTS));
    Path file = dir.resolve("firefox-" + name + ".png");
    JsonNode size = js("() => ({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight })");
    Map<String, Object> shot = send("browsingContext.captureScreenshot", Map.of("context", context, "origin", "document",
        "clip", Map.of("type", "box", "x", 0, "y", 0, "width", size.get("w").asInt(),
            "height", Math.min(Browser.MAX_SCREENSHOT_HEIGHT, size.get("h").asInt()))));
    Files.write(file, Base64.getDecoder().decode((String) shot.get("data")));
    return file;
  }

  /** Forgets the console entries seen so far (a test looks only at its own). */
  void clearConsole() {
    consoleEntries.clear();
  }

  /**
   * The console entries of level {@code error} since the start or {@link #clearConsole}: what the page
   * logged with {@code console.error} and the exceptions it did not catch, as {@code "type: text"}.
   */
  List<String> consoleErrors() {
    return consoleEntries.stream().filter(e -> "error".equals(e.get("level")))
        .map(e -> e.get("type") + ": " + e.get("text")).toList();
  }

  /** Ends the session, then kills Firefox and its content processes, and deletes the profile. */
  @Override
  public void close() {
    try {
      bidi.send(new Command<>("session.end", Map.of(), result -> result), Duration.ofSeconds(10));
    } catch (RuntimeException alreadyGone) {
      // The processes are killed below whatever the session's state.
    }
    try {
      connection.close();
    } catch (org.openqa.selenium.WebDriverException closedByFirefox) {
      // Firefox may close the socket itself after session.end ("Output closed"): nothing is left to close.
    } finally {
      kill();
    }
  }

  private void kill() {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (Stream<Path> files = Files.walk(profile)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // A profile left under target/ is cleaned by the next mvn clean.
    }
  }
}
