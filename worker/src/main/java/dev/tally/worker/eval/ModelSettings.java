package dev.tally.worker.eval;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.core.DurationText;
import dev.tally.core.FleetLimits;
import dev.tally.core.Price;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The model evaluator's settings ({@code --evaluator model}), read from a run's evaluator options, and the
 * one owner of those options: their names in the options map and on the command line ({@code base-url},
 * {@code --base-url}; {@code seed}, {@code --model-seed}), their names and JSON types in the HTTP API's evaluator object ({@code baseUrl}), and
 * what each may be. The command line, the API's submission, the run object and the worker all convert
 * through {@link Option}, {@link #toJson} and {@link #fromJson}; {@link #parse} checks the values.
 *
 * <p>No option holds the API key: {@code api-key-env} names the environment variable a worker reads it
 * from when a case runs, so the key is never in a run's options, its store, a message or a log.
 *
 * @param endpoint the Chat Completions URL: the base URL with {@code /chat/completions} appended
 * @param model the model's name, sent as {@code model}
 * @param apiKeyEnv the environment variable holding the API key (sent as a bearer token when set)
 * @param prompt the prompt template over the case's fields, or null (the case's {@code input} is the prompt)
 * @param system a system message put before the case's messages, or null
 * @param temperature sampling temperature in [0, 2], or null (the endpoint's default)
 * @param maxCompletionTokens most tokens to generate per case ({@code --max-completion-tokens}, sent as {@code
 *     max_tokens}), {@code >= 1}, or null
 * @param stop stop sequences (empty: none)
 * @param seed the sampling seed, or null
 * @param requestTimeout how long one request may take, or null (the attempt's remaining time budget)
 * @param price USD per million prompt and completion tokens, or null (no cost is computed)
 */
public record ModelSettings(
    URI endpoint,
    String model,
    String apiKeyEnv,
    PromptTemplate prompt,
    String system,
    Double temperature,
    Integer maxCompletionTokens,
    List<String> stop,
    Long seed,
    Duration requestTimeout,
    Price price) {


  /**
   * Most stop sequences: OpenAI's API takes at most 4, and a longer list is more likely a mistake (a
   * stop per case) than a setting.
   */
  public static final int MAX_STOP_SEQUENCES = 4;

  /** OpenAI's range of {@code temperature}. */
  static final double MAX_TEMPERATURE = 2.0;


  /** What an option's value is, in the API's JSON (in the options map every value is a string). */
  enum Type {
    TEXT, NUMBER, INTEGER, TEXT_LIST
  }

  /** The options, with their names in the options map (and on the command line) and in the API's JSON. */
  public enum Option {
    BASE_URL("base-url", "baseUrl", Type.TEXT),
    MODEL("model", "model", Type.TEXT),
    API_KEY_ENV("api-key-env", "apiKeyEnv", Type.TEXT),
    PROMPT("prompt", "prompt", Type.TEXT),
    SYSTEM("system", "system", Type.TEXT),
    TEMPERATURE("temperature", "temperature", Type.NUMBER),
    MAX_COMPLETION_TOKENS("max-completion-tokens", "maxCompletionTokens", Type.INTEGER),
    STOP("stop", "stop", Type.TEXT_LIST),
    // --seed and --request-timeout already mean the dataset sample's seed and the API client's timeout
    SEED("seed", "seed", Type.INTEGER, "--model-seed"),
    REQUEST_TIMEOUT("request-timeout", "requestTimeout", Type.TEXT, "--model-request-timeout"),
    PRICE(Price.OPTION, "price", Type.TEXT),
    MAX_CONCURRENCY(FleetLimits.MAX_CONCURRENCY, "maxConcurrency", Type.INTEGER),
    REQUESTS_PER_MINUTE(FleetLimits.REQUESTS_PER_MINUTE, "requestsPerMinute", Type.NUMBER),
    TOKENS_PER_MINUTE(FleetLimits.TOKENS_PER_MINUTE, "tokensPerMinute", Type.NUMBER),
    MAX_TOKENS(FleetLimits.MAX_TOKENS, "maxTokens", Type.INTEGER),
    MAX_COST(FleetLimits.MAX_COST, "maxCost", Type.NUMBER);

    /** The option's key in the evaluator options map. */
    public final String key;
    /** The field's name in the API's evaluator object. */
    public final String jsonName;
    final Type type;
    private final String flag;

    Option(String key, String jsonName, Type type) {
      this(key, jsonName, type, "--" + key);
    }

    Option(String key, String jsonName, Type type, String flag) {
      this.key = key;
      this.jsonName = jsonName;
      this.type = type;
      this.flag = flag;
    }

    /** The command line's flag: {@code --base-url}, {@code --model-seed}. */
    public String flag() {
      return flag;
    }

    /** The option whose key is {@code key}, or null. */
    public static Option byKey(String key) {
      for (Option o : values()) {
        if (o.key.equals(key)) {
          return o;
        }
      }
      return null;
    }
  }

  /** A value refused, with the option it belongs to (for a message or a problem's place). */
  public static final class OptionException extends IllegalArgumentException {
    private final Option option;

    OptionException(Option option, String message) {
      super(message);
      this.option = option;
    }

    /** The option at fault, or null when the problem is not one option's (a missing required one is). */
    public Option option() {
      return option;
    }
  }

  public ModelSettings {
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(apiKeyEnv, "apiKeyEnv");
    stop = List.copyOf(stop);
  }

  /**
   * Reads and checks the settings from a run's evaluator options (other keys, such as the scorers', are
   * ignored).
   *
   * @throws OptionException naming the option (its command-line flag) if {@code base-url} or {@code model}
   *     is missing, or a value is malformed: a base URL that is not an absolute http(s) URL, a variable name
   *     that is not one, a blank prompt, a temperature outside [0, 2], max tokens below 1, more than {@link
   *     #MAX_STOP_SEQUENCES} stops or an empty one, a seed that is not an integer, a request timeout that is
   *     not a positive duration, a price that is not {@code IN,OUT} with two non-negative numbers
   */
  public static ModelSettings parse(Map<String, String> options) {
    String base = required(options, Option.BASE_URL);
    URI endpoint = endpoint(base);
    String model = required(options, Option.MODEL);
    String keyEnv = options.getOrDefault(Option.API_KEY_ENV.key, dev.tally.core.ChatEndpoint.DEFAULT_API_KEY_ENV);
    try {
      dev.tally.core.ChatEndpoint.apiKeyVariable(keyEnv);
    } catch (IllegalArgumentException e) {
      throw new OptionException(Option.API_KEY_ENV, Option.API_KEY_ENV.flag() + " " + e.getMessage());
    }
    PromptTemplate prompt = null;
    if (options.containsKey(Option.PROMPT.key)) {
      try {
        prompt = PromptTemplate.parse(options.get(Option.PROMPT.key));
      } catch (IllegalArgumentException e) {
        throw new OptionException(Option.PROMPT, Option.PROMPT.flag() + ": " + e.getMessage());
      }
    }
    String system = options.get(Option.SYSTEM.key);
    Double temperature = null;
    if (options.containsKey(Option.TEMPERATURE.key)) {
      temperature = number(options, Option.TEMPERATURE);
      if (!(temperature >= 0 && temperature <= MAX_TEMPERATURE)) {
        throw new OptionException(Option.TEMPERATURE, Option.TEMPERATURE.flag() + " must be from 0 to 2, got "
            + options.get(Option.TEMPERATURE.key));
      }
    }
    Integer maxCompletionTokens = null;
    if (options.containsKey(Option.MAX_COMPLETION_TOKENS.key)) {
      long n = integer(options, Option.MAX_COMPLETION_TOKENS);
      if (n < 1 || n > Integer.MAX_VALUE) {
        throw new OptionException(Option.MAX_COMPLETION_TOKENS, Option.MAX_COMPLETION_TOKENS.flag()
            + " must be a whole number >= 1, got " + n);
      }
      maxCompletionTokens = (int) n;
    }
    List<String> stop = options.containsKey(Option.STOP.key) ? stops(options.get(Option.STOP.key)) : List.of();
    Long seed = options.containsKey(Option.SEED.key) ? integer(options, Option.SEED) : null;
    Duration requestTimeout = null;
    if (options.containsKey(Option.REQUEST_TIMEOUT.key)) {
      String text = options.get(Option.REQUEST_TIMEOUT.key);
      try {
        requestTimeout = DurationText.parse(text);
      } catch (IllegalArgumentException e) {
        throw new OptionException(Option.REQUEST_TIMEOUT, Option.REQUEST_TIMEOUT.flag() + ": " + e.getMessage());
      }
      if (requestTimeout.isZero() || requestTimeout.isNegative()) {
        throw new OptionException(Option.REQUEST_TIMEOUT, Option.REQUEST_TIMEOUT.flag() + " must be positive, got " + text);
      }
    }
    Price price = options.containsKey(Option.PRICE.key) ? price(options.get(Option.PRICE.key)) : null;
    try {
      FleetLimits.parse(options); // the coordinator's to apply; checked here with the rest
    } catch (FleetLimits.LimitException e) {
      throw new OptionException(Option.byKey(e.key()), e.getMessage());
    }
    return new ModelSettings(endpoint, model, keyEnv, prompt, system, temperature, maxCompletionTokens, stop, seed, requestTimeout,
        price);
  }

  /** The options map's value of {@code --stop} for these stop sequences (a JSON array of strings). */
  public static String stopValue(List<String> stops) {
    try {
      return CaseJson.MAPPER.writeValueAsString(stops);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a list of strings cannot fail to serialize", e);
    }
  }

  /**
   * The model options among {@code options} as the API's evaluator fields ({@code baseUrl}, {@code
   * temperature} as a number, {@code stop} as an array...), to be put beside {@code kind}.
   *
   * @throws IllegalArgumentException if a numeric option or the stop list is malformed (options that
   *     {@link #parse} accepted never are)
   */
  public static ObjectNode toJson(Map<String, String> options) {
    ObjectNode out = CaseJson.MAPPER.createObjectNode();
    for (Option o : Option.values()) {
      String value = options.get(o.key);
      if (value == null) {
        continue;
      }
      switch (o.type) {
        case TEXT -> out.put(o.jsonName, value);
        case NUMBER -> out.put(o.jsonName, number(options, o));
        case INTEGER -> out.put(o.jsonName, integer(options, o));
        case TEXT_LIST -> {
          ArrayNode array = out.putArray(o.jsonName);
          stops(value).forEach(array::add);
        }
      }
    }
    return out;
  }

  /**
   * The evaluator options given by the API's evaluator object's model fields (the inverse of {@link
   * #toJson}); fields that are not model options ({@code kind}) are the caller's to check. The values are
   * only converted here: {@link #parse} checks them.
   *
   * @throws OptionException naming the option (its {@link Option#jsonName} is the field) if a field has the
   *     wrong JSON type
   */
  public static Map<String, String> fromJson(JsonNode evaluator) {
    Map<String, String> options = new LinkedHashMap<>();
    for (Option o : Option.values()) {
      JsonNode v = evaluator.get(o.jsonName);
      if (v == null || v.isNull()) {
        continue;
      }
      switch (o.type) {
        case TEXT -> {
          if (!v.isTextual()) {
            throw new OptionException(o, o.jsonName + " must be a string, got " + v);
          }
          options.put(o.key, v.textValue());
        }
        case NUMBER -> {
          if (!v.isNumber()) {
            throw new OptionException(o, o.jsonName + " must be a number, got " + v);
          }
          options.put(o.key, v.asText());
        }
        case INTEGER -> {
          if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new OptionException(o, o.jsonName + " must be a whole number, got " + v);
          }
          options.put(o.key, Long.toString(v.longValue()));
        }
        case TEXT_LIST -> {
          List<String> list = new ArrayList<>();
          if (!v.isArray()) {
            throw new OptionException(o, o.jsonName + " must be an array of strings, got " + v);
          }
          for (JsonNode s : v) {
            if (!s.isTextual()) {
              throw new OptionException(o, o.jsonName + " must be an array of strings, got " + v);
            }
            list.add(s.textValue());
          }
          options.put(o.key, stopValue(list));
        }
      }
    }
    return options;
  }

  /** The names of the API evaluator object's model fields. */
  public static List<String> jsonNames() {
    List<String> names = new ArrayList<>();
    for (Option o : Option.values()) {
      names.add(o.jsonName);
    }
    return names;
  }

  private static String required(Map<String, String> options, Option o) {
    String v = options.get(o.key);
    if (v == null || v.isBlank()) {
      throw new OptionException(o, "--evaluator model needs " + o.flag() + (o == Option.BASE_URL
          ? " (the endpoint's base URL, e.g. https://api.openai.com/v1)" : " (the model's name)"));
    }
    return v.strip();
  }

  private static URI endpoint(String base) {
    try {
      return dev.tally.core.ChatEndpoint.chatCompletions(base);
    } catch (IllegalArgumentException e) {
      throw new OptionException(Option.BASE_URL, Option.BASE_URL.flag() + " " + e.getMessage());
    }
  }

  private static double number(Map<String, String> options, Option o) {
    String text = options.get(o.key).strip();
    try {
      double d = Double.parseDouble(text);
      if (Double.isFinite(d)) {
        return d;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new OptionException(o, o.flag() + " must be a number, got '" + text + "'");
  }

  private static long integer(Map<String, String> options, Option o) {
    String text = options.get(o.key).strip();
    try {
      return Long.parseLong(text);
    } catch (NumberFormatException e) {
      throw new OptionException(o, o.flag() + " must be a whole number, got '" + text + "'");
    }
  }

  private static List<String> stops(String value) {
    List<String> list = new ArrayList<>();
    try {
      JsonNode array = CaseJson.MAPPER.readTree(value);
      if (array == null || !array.isArray()) {
        throw new OptionException(Option.STOP, "the stop option must be a JSON array of strings, got " + value);
      }
      for (JsonNode s : array) {
        if (!s.isTextual() || s.textValue().isEmpty()) {
          throw new OptionException(Option.STOP, Option.STOP.flag() + " must be a non-empty text, got " + s);
        }
        list.add(s.textValue());
      }
    } catch (JsonProcessingException e) {
      throw new OptionException(Option.STOP, "the stop option must be a JSON array of strings, got " + value);
    }
    if (list.size() > MAX_STOP_SEQUENCES) {
      throw new OptionException(Option.STOP, "at most " + MAX_STOP_SEQUENCES + " " + Option.STOP.flag()
          + " sequences (the OpenAI API's limit), got " + list.size());
    }
    return list;
  }

  private static Price price(String text) {
    try {
      return Price.parse(text);
    } catch (IllegalArgumentException e) {
      throw new OptionException(Option.PRICE, e.getMessage());
    }
  }

}
