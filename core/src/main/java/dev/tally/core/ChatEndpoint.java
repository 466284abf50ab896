package dev.tally.core;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * An OpenAI-compatible chat endpoint as Tally is told it (a base URL and the variable that holds the key),
 * the one owner of its rules for the model evaluator ({@code --base-url}) and the model-graded scorer
 * ({@code base-url=}). They had a rule each: the scorer took {@code https://user:secret@host/v1} (its
 * credentials then stored in the run's spec and shown on the dashboard) and a query its grader then put
 * before {@code /chat/completions}, and refused {@code HTTPS://}; the evaluator the other way round.
 *
 * <p>Thread-safety: stateless.
 */
public final class ChatEndpoint {
  private ChatEndpoint() {}

  /** The variable the key is read from when none is named: the OpenAI clients' own. */
  public static final String DEFAULT_API_KEY_ENV = "OPENAI_API_KEY";

  /** The path appended to the base URL (OpenAI's, and every compatible server's). */
  public static final String CHAT_COMPLETIONS_PATH = "/chat/completions";

  private static final Pattern VARIABLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /**
   * The chat completions address of {@code base}: its path without trailing slashes, then {@value
   * #CHAT_COMPLETIONS_PATH}.
   *
   * @param base an http or https URL (the scheme in any case) with a host, and no query, fragment or
   *     credentials; e.g. {@code https://api.openai.com/v1}
   * @throws IllegalArgumentException if {@code base} is not such a URL; the message says what is wrong and
   *     quotes it, for the caller to put after the option's name
   */
  public static URI chatCompletions(String base) {
    URI uri;
    try {
      uri = new URI(base.strip());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("is not a URL: " + e.getMessage());
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null || uri.getQuery() != null
        || uri.getFragment() != null || uri.getUserInfo() != null || uri.getPort() > 65_535) {
      throw new IllegalArgumentException("must be an http or https URL with a host (and a port up to 65535) and no"
          + " query, fragment or credentials (e.g. https://api.openai.com/v1), got '" + base + "'");
    }
    String path = uri.getRawPath() == null ? "" : uri.getRawPath();
    while (path.endsWith("/")) {
      path = path.substring(0, path.length() - 1);
    }
    return URI.create(scheme + "://" + uri.getRawAuthority() + path + CHAT_COMPLETIONS_PATH);
  }

  /**
   * Checks the name of the variable the key is read from.
   *
   * @return {@code name}
   * @throws IllegalArgumentException if it is not a variable's name (letters, digits, {@code _}; not a digit
   *     first), quoting it
   */
  public static String apiKeyVariable(String name) {
    if (name == null || !VARIABLE_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("must name an environment variable (letters, digits, _), got '" + name + "'");
    }
    return name;
  }
}
