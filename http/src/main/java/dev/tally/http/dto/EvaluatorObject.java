package dev.tally.http.dto;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/**
 * How a run's cases are evaluated: {@code {"kind": "exec", "cmd": "..."}} (with {@code "serve": true}: the command
 * started once per slot, the cases one per line on its stdin), {@code {"kind": "model", "baseUrl":
 * "...", "model": "...", ...}}, {@code {"kind": "sleep", "millis": N}} (millis absent: each case's own {@code
 * millis} field, else 0) or {@code {"kind": "noop"}}. Fields that do not apply to the kind, or were not given,
 * are absent. The model's fields are the {@code tally run} flags of the same names; none is the API key, which
 * each worker reads from its environment variable {@code apiKeyEnv}.
 *
 * @param kind {@code exec}, {@code model}, {@code sleep} or {@code noop}
 * @param cmd exec's command template
 * @param serve exec: true when the command is started once per slot and serves the cases one per line; absent
 *     otherwise
 * @param millis sleep's milliseconds per case
 * @param baseUrl model: the endpoint's base URL (requests go to {@code baseUrl/chat/completions})
 * @param model model: the model's name
 * @param apiKeyEnv model: the environment variable the key is read from (default {@code OPENAI_API_KEY})
 * @param prompt model: the prompt template over the case's fields ({@code {field}}); absent: the case's input
 * @param system model: a system message put first
 * @param temperature model: sampling temperature, 0 to 2
 * @param maxCompletionTokens model: most tokens to generate per case (sent as {@code max_tokens})
 * @param stop model: stop sequences
 * @param seed model: the sampling seed
 * @param requestTimeout model: the longest one request may take, a duration such as {@code "30s"}
 * @param price model: USD per million prompt and completion tokens, {@code "IN,OUT"}
 * @param maxConcurrency model: at most this many requests in flight for the whole fleet
 * @param requestsPerMinute model: at most this many requests a minute for the whole fleet
 * @param tokensPerMinute model: at most about this many tokens a minute for the whole fleet
 * @param maxTokens model: the run's token cap (it leases no more once its responses used this many)
 * @param maxCost model: the run's spend cap in USD (needs {@code price})

 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record EvaluatorObject(
    String kind,
    String cmd,
    Boolean serve,
    Long millis,
    String baseUrl,
    String model,
    String apiKeyEnv,
    String prompt,
    String system,
    Double temperature,
    Long maxCompletionTokens,
    List<String> stop,
    Long seed,
    String requestTimeout,
    String price,
    Long maxConcurrency,
    Double requestsPerMinute,
    Double tokensPerMinute,
    Long maxTokens,
    Double maxCost) {}
