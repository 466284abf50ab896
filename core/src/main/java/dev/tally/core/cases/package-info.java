/**
 * The case grammar: what one case of a dataset is, and how a stream of JSON Lines becomes cases, one at a
 * time. {@link dev.tally.core.cases.CaseLines} is its one owner: {@code tally run} reads a dataset file with
 * it, and the HTTP API reads an uploaded body with it. {@link dev.tally.core.cases.CaseSource} is how cases
 * reach a store ({@link dev.tally.core.store.Store#createRun}), pulled one by one so that a large dataset
 * never sits whole in memory.
 */
package dev.tally.core.cases;
