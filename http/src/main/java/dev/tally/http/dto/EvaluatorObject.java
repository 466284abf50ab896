package dev.tally.http.dto;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * How a run's cases are evaluated: {@code {"kind": "exec", "cmd": "..."}}, {@code {"kind": "sleep",
 * "millis": N}} (millis absent: each case's own {@code millis} field, else 0) or {@code {"kind": "noop"}}.
 *
 * @param kind {@code exec}, {@code sleep} or {@code noop}
 * @param cmd exec's command template; absent for the others
 * @param millis sleep's milliseconds per case; absent for the others
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record EvaluatorObject(String kind, String cmd, Long millis) {}
