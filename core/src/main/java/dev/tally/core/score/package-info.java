/**
 * Scorers: pure functions from a case's fields and an evaluator's answer to a score and a verdict, named on a
 * command line as {@code --scorer exact:ignore-case}. {@link dev.tally.core.score.Scorers} owns the grammar
 * and the list of built-in scorers ({@code exact}, {@code includes}, {@code regex}, {@code numeric}, {@code
 * choice}, {@code json}); each built-in is a class of its own. No I/O, no clock, no randomness: a scorer that
 * needs a file (a JSON Schema) gets its text at parse time through {@link dev.tally.core.score.ScorerFiles},
 * from whoever may read files.
 */
package dev.tally.core.score;
