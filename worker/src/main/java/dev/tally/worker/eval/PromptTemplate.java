package dev.tally.worker.eval;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A model evaluator's prompt with {@code {field}} placeholders, filled per case ({@code --prompt 'Question:
 * {question}'}). The placeholder grammar is {@link CommandTemplate}'s ({@code {name}}, a field path such
 * as {@code {meta.lang}}, {@code {{} and {@code }}} for literal braces, other braces literal); unlike a
 * command line, the text is not split into arguments and nothing is quoted: {@code {raw:name}} means the
 * same as {@code {name}}. A string field is inserted as it is, any other value as its JSON text.
 *
 * <p>Immutable and thread-safe.
 */
public final class PromptTemplate {
  private final String source;
  private final List<CommandTemplate.Part> parts;
  private final Set<String> fields;

  private PromptTemplate(String source, List<CommandTemplate.Part> parts) {
    this.source = source;
    this.parts = parts;
    Set<String> names = new LinkedHashSet<>();
    for (CommandTemplate.Part p : parts) {
      if (p.placeholder()) {
        names.add(p.field());
      }
    }
    this.fields = Collections.unmodifiableSet(names);
  }

  /**
   * Parses a prompt template. Every text is a template (one without placeholders is a fixed prompt).
   *
   * @throws IllegalArgumentException if {@code template} is blank: a blank prompt asks the model nothing
   */
  public static PromptTemplate parse(String template) {
    Objects.requireNonNull(template, "template");
    if (template.isBlank()) {
      throw new IllegalArgumentException("the prompt template is blank");
    }
    return new PromptTemplate(template, CommandTemplate.placeholders(template));
  }

  /** The fields the placeholders name, in order of first appearance. */
  public Set<String> fields() {
    return fields;
  }

  /**
   * The first field the template uses that {@code caseObject} lacks, if any (a JSON {@code null} is present).
   *
   * @param caseObject the case's JSON object
   */
  public Optional<String> missingField(JsonNode caseObject) {
    return CommandTemplate.firstMissing(fields, caseObject);
  }

  /**
   * The prompt for one case.
   *
   * @param caseObject the case's JSON object
   * @throws CommandTemplate.MissingFieldException if the case lacks a field a placeholder names
   */
  String fill(JsonNode caseObject) throws CommandTemplate.MissingFieldException {
    Optional<String> missing = missingField(caseObject);
    if (missing.isPresent()) {
      throw new CommandTemplate.MissingFieldException(missing.get());
    }
    StringBuilder b = new StringBuilder();
    for (CommandTemplate.Part p : parts) {
      if (p.placeholder()) {
        b.append(CommandTemplate.textOf(CommandTemplate.valueAt(caseObject, p.field())));
      } else {
        b.append(p.literal());
      }
    }
    return b.toString();
  }

  @Override
  public String toString() {
    return source;
  }
}
