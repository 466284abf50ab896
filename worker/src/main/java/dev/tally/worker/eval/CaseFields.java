package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.core.EvaluatorSpec;
import java.util.Optional;
import java.util.function.Function;

/**
 * The fields an evaluator's template needs of every case, so that a run can refuse a case that lacks one
 * before anything runs: the placeholders of an {@code exec} evaluator's {@code cmd} ({@link CommandTemplate}),
 * or of a {@code model} evaluator's {@code prompt} ({@link PromptTemplate}). The command line and the API
 * both ask this class, so they check the same fields by the worker's own grammars.
 *
 * <p>Immutable and thread-safe.
 *
 * @param option the evaluator option whose template names the fields: {@code cmd} or {@code prompt}
 * @param missingField the first field path a case (its JSON object) lacks, if any
 */
public record CaseFields(String option, Function<JsonNode, Optional<String>> missingField) {
  /**
   * The fields {@code spec}'s template needs, or empty for an evaluator without a template (noop, sleep, a
   * model without a prompt).
   *
   * @throws IllegalArgumentException if the template is refused by its grammar; the message does not name
   *     the option ({@link #option} of the result would be {@code cmd} or {@code prompt})
   */
  public static Optional<CaseFields> of(EvaluatorSpec spec) {
    String cmd = spec.options().get("cmd");
    if (cmd != null) {
      return Optional.of(new CaseFields("cmd", CommandTemplate.parse(cmd)::missingField));
    }
    String prompt = spec.kind().equals("model") ? spec.options().get(ModelSettings.Option.PROMPT.key) : null;
    return prompt == null ? Optional.empty() : Optional.of(new CaseFields("prompt", PromptTemplate.parse(prompt)::missingField));
  }

  /**
   * The sentence that refuses a case lacking a field its template uses, the one wording of the command line
   * and the API: {@code case "a" has no field "meta.lang" ("meta" has "name"), which --cmd uses}, with what
   * stood in the path's way ({@link CommandTemplate#missingReason}).
   *
   * @param caseId the case's id (quoted by {@link dev.tally.core.cases.CaseLines#quotedId})
   * @param caseObject the case's JSON object
   * @param path the field path it lacks
   * @param user what uses the field: {@code --cmd}, {@code the evaluator's cmd}
   * @return the sentence, without a place (the caller puts the file and line, or the request's, in front)
   */
  public static String missingFieldDetail(String caseId, JsonNode caseObject, String path, String user) {
    return "case " + dev.tally.core.cases.CaseLines.quotedId(caseId) + " has no field \"" + path + "\""
        + CommandTemplate.missingReason(caseObject, path) + ", which " + user + " uses";
  }
}
