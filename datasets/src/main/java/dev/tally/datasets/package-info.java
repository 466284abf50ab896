/**
 * Datasets in the formats eval people already have, read as {@link dev.tally.core.cases.CaseSource}s: JSON
 * Lines, a JSON array, CSV, YAML, and the sample shapes of openai/evals, Inspect and promptfoo, each mapped
 * onto the conventional case fields ({@code input}, {@code target}, {@code choices}, {@code metadata}).
 * {@link dev.tally.datasets.DatasetReader} is the entry: it detects or is told the format ({@link
 * dev.tally.datasets.DatasetFormat}), gives a case without an id one made from its content ({@link
 * dev.tally.datasets.CaseIds}), and applies the selection of {@link dev.tally.datasets.ReadOptions} (first
 * N, a seeded sample, epochs). What a case line is and what an id may be stay {@link
 * dev.tally.core.cases.CaseLines}' rules; this package calls them.
 */
package dev.tally.datasets;
