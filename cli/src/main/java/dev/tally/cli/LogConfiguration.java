package dev.tally.cli;

import ch.qos.logback.classic.ClassicConstants;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ConfiguratorRank;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.LayoutWrappingEncoder;
import ch.qos.logback.core.spi.ContextAwareBase;

/**
 * How every {@code tally} JVM logs, set in code rather than in a {@code logback.xml}: logback finds this
 * class through {@code META-INF/services/ch.qos.logback.classic.spi.Configurator} before it looks for any XML.
 * Reading XML costs each JVM a SAX parser and Joran's model of the file, about 40 ms of CPU at start
 * (async-profiler, a local worker's JVM), and {@code tally run} with local workers starts four of them: its
 * three-case run took 1.92 s of CPU against 2.13 s with the XML (medians of 2 x 9 runs, one sitting).
 *
 * <ul>
 *   <li>Everything goes to stderr, so that stdout carries only the summary table and machine-readable output.
 *   <li>Each line: {@value #PATTERN}; {@code tallyEx} is {@link CompactThrowableConverter} (the machine's
 *       trouble, a full disk or a closed socket, as one line with its causes; a bug keeps its stack trace).
 *   <li>Tally's own loggers ({@code dev.tally}) at the level {@value #LEVEL_VARIABLE} names (default
 *       {@code WARN}; a name logback does not know is {@code WARN} too); everyone else's at {@code WARN}.
 * </ul>
 *
 * <p>A {@code logback-test.xml} or {@code logback.xml} on the class path is not read while this class is on it;
 * a file named with {@code -Dlogback.configurationFile=FILE} (in {@code TALLY_JAVA_OPTS}, say) is: then this
 * class steps aside and logback's own configurator reads it. If there is no such file, this class configures
 * as usual and says so in a warning (logback alone would log everything at DEBUG to stdout).
 *
 * <p>Thread-safety: logback calls it once, on the thread that first asks for a logger.
 */
@ConfiguratorRank(ConfiguratorRank.CUSTOM_NORMAL_PRIORITY)
public final class LogConfiguration extends ContextAwareBase implements Configurator {

  /** The environment variable that sets the level of Tally's own loggers. */
  public static final String LEVEL_VARIABLE = "TALLY_LOG_LEVEL";

  /** The layout of a log line. */
  static final String PATTERN = "%d{HH:mm:ss.SSS} %-5level [%thread] %logger{0} - %msg%n%tallyEx";

  @Override
  public ExecutionStatus configure(LoggerContext context) {
    String named = System.getProperty(ClassicConstants.CONFIG_FILE_PROPERTY);
    if (named != null && exists(named)) {
      return ExecutionStatus.INVOKE_NEXT_IF_ANY; // the user's file: logback's Joran configurator reads it
    }
    PatternLayout layout = layout(context);
    LayoutWrappingEncoder<ILoggingEvent> encoder = new LayoutWrappingEncoder<>();
    encoder.setContext(context);
    encoder.setLayout(layout);
    encoder.start();

    ConsoleAppender<ILoggingEvent> stderr = new ConsoleAppender<>();
    stderr.setContext(context);
    stderr.setName("STDERR");
    stderr.setTarget("System.err");
    stderr.setEncoder(encoder);
    stderr.start();

    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.setLevel(Level.WARN);
    root.addAppender(stderr);
    context.getLogger("dev.tally").setLevel(tallyLevel(System.getenv(LEVEL_VARIABLE)));
    // The schema validator logs a schema's faults (a pattern that does not compile) as its own errors, which
    // the json scorer already reports, in words, as the spec's or the case's.
    context.getLogger("com.networknt.schema").setLevel(Level.OFF);
    if (named != null) {
      // Logback itself would fall back to its basic configuration: every logger at DEBUG, on stdout, where
      // the summary table and the run ids a script reads go.
      root.warn("-D{}={}: no such file or class path resource; logging as Tally does without it",
          ClassicConstants.CONFIG_FILE_PROPERTY, named);
    }
    return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
  }

  /**
   * The layout of Tally's log lines ({@link #PATTERN}), started. Log lines quote outside text (a case's output
   * in a pause reason, a worker's name): shown as a terminal may show it ({@link TerminalText#safeKeepingLines}),
   * escape sequences and bidirectional overrides as {@code ?}, line breaks kept.
   */
  static PatternLayout layout(LoggerContext context) {
    PatternLayout layout = new PatternLayout() {
      @Override
      public String doLayout(ILoggingEvent event) {
        return TerminalText.safeKeepingLines(super.doLayout(event));
      }
    };
    layout.setContext(context);
    layout.getInstanceConverterMap().put("tallyEx", CompactThrowableConverter::new);
    layout.setPattern(PATTERN);
    layout.start();
    return layout;
  }

  /** Whether {@code name} is what logback can read: a file, a class path resource, or a URL that opens. */
  private static boolean exists(String name) {
    if (name.isBlank()) {
      return false;
    }
    try {
      if (java.nio.file.Files.isReadable(java.nio.file.Path.of(name))) {
        return true;
      }
    } catch (java.nio.file.InvalidPathException e) {
      // not a path: a URL, perhaps
    }
    if (LogConfiguration.class.getClassLoader().getResource(name) != null) {
      return true;
    }
    try (java.io.InputStream in = new java.net.URL(name).openStream()) {
      return true;
    } catch (java.io.IOException | IllegalArgumentException e) {
      return false;
    }
  }

  /** The level {@code value} names (any case), {@code WARN} when it is missing or names none. */
  static Level tallyLevel(String value) {
    return Level.toLevel(value == null ? null : value.strip(), Level.WARN);
  }
}
