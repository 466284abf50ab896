package dev.tally.cli.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A headless Chromium (Debian's {@code chromium} and {@code chromium-driver}, which {@code .ci/run}
 * installs) driven through its chromedriver, at a laptop's window size, for the dashboard's tests. Screenshots
 * go to {@value #SCREENSHOTS} under the module's {@code target/}.
 *
 * <p>Thread-safety: one test thread.
 */
final class Browser implements AutoCloseable {
  static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
  /** Where each test's screenshots go (a person looks at them; README's are copied from here). */
  static final String SCREENSHOTS = "target/dashboard-screenshots";
  /** How long a page may take to show what a test waits for, on a loaded 2-core machine. */
  static final Duration PATIENCE = Duration.ofSeconds(60);

  /** The browser window's size, CSS px (headless, so all of it is page): a laptop screen's, as issue 9 asks. */
  static final int WIDTH = 1440;
  static final int HEIGHT = 900;

  /** The tallest screenshot, px: a whole page of a run with its first page of cases. */
  static final int MAX_SCREENSHOT_HEIGHT = 2400;

  final ChromeDriver driver;

  Browser(Path profile) {
    assertThat(CHROMIUM).as("the dashboard tests need chromium and chromium-driver (apt-get install chromium chromium-driver, as .ci/run does)")
        .isExecutable();
    assertThat(CHROMEDRIVER).as("the dashboard tests need chromium-driver (apt-get install chromium-driver)").isExecutable();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=" + WIDTH + "," + HEIGHT,
        "--user-data-dir=" + profile, "--no-first-run", "--disable-gpu");
    options.setCapability("goog:loggingPrefs", Map.of(LogType.BROWSER, "ALL"));
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(CHROMEDRIVER.toFile())
        .usingAnyFreePort()
        .withLogFile(profile.resolveSibling(profile.getFileName() + "-chromedriver.log").toFile())
        .build();
    driver = new ChromeDriver(service, options);
    driver.manage().timeouts().scriptTimeout(Duration.ofSeconds(30));
  }

  WebDriverWait waiting() {
    return new WebDriverWait(driver, PATIENCE, Duration.ofMillis(100));
  }

  WebElement find(String css) {
    return driver.findElement(By.cssSelector(css));
  }

  List<WebElement> all(String css) {
    return driver.findElements(By.cssSelector(css));
  }

  Object script(String js, Object... args) {
    return ((JavascriptExecutor) driver).executeScript(js, args);
  }

  /**
   * The text of the first element {@code css} selects, or null if none: read in one script, so that a
   * live page that re-renders meanwhile cannot leave the test holding a stale element.
   */
  String text(String css) {
    return (String) script("const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;", css);
  }

  /** The texts of every element {@code css} selects, read in one script (as {@link #text}). */
  @SuppressWarnings("unchecked")
  List<String> texts(String css) {
    return (List<String>) script("return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.trim());", css);
  }

  /** Opens the dashboard at {@code url} and signs in with {@code token}. */
  void signIn(String url, String token) {
    driver.get(url);
    waiting().until(d -> !all("#token").isEmpty());
    find("#token").sendKeys(token);
    find("#login button[type=submit]").click();
    waiting().until(d -> all("#token").isEmpty() && !all("main h1").isEmpty());
  }

  /**
   * Saves the whole page (the window grown to its height, at most {@value #MAX_SCREENSHOT_HEIGHT} px) as
   * {@code target/dashboard-screenshots/NAME.png}.
   */
  Path screenshot(String name) throws IOException {
    Path dir = Path.of(SCREENSHOTS);
    Files.createDirectories(dir);
    Path file = dir.resolve(name + ".png");
    Dimension before = driver.manage().window().getSize();
    long height = ((Number) script("return document.documentElement.scrollHeight;")).longValue();
    int chrome = before.getHeight() - ((Number) script("return window.innerHeight;")).intValue();
    driver.manage().window().setSize(new Dimension(before.getWidth(), (int) Math.min(MAX_SCREENSHOT_HEIGHT, height + chrome)));
    try {
      Files.write(file, driver.getScreenshotAs(OutputType.BYTES));
    } finally {
      driver.manage().window().setSize(before);
    }
    return file;
  }

  /**
   * The page's console errors but the browser's own lines about a request that failed or was answered
   * with an error status (a 409 while a submission is processed, a network error a test causes): what the
   * page's scripts did wrong.
   */
  List<String> scriptErrors() {
    return driver.manage().logs().get(LogType.BROWSER).getAll().stream()
        .filter(e -> e.getLevel().intValue() >= Level.SEVERE.intValue())
        .map(LogEntry::getMessage)
        .filter(m -> !m.contains(" - Failed to load resource: "))
        .toList();
  }

  @Override
  public void close() {
    driver.quit();
  }
}
