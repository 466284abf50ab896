/**
 * The client side of Tally's HTTP API, for {@code tally submit}, {@code runs}, {@code wait}, {@code results}
 * and {@code cancel}: {@link dev.tally.cli.client.ApiClient} (requests, the retry policy, problems), {@link
 * dev.tally.cli.client.SubmissionState} (the state file that keeps a submission's idempotency key across
 * its retries and across invocations) and {@link dev.tally.cli.client.DatasetUpload} (a dataset checked by
 * the case grammar, then streamed as the body of a submission). The commands themselves are in {@code
 * dev.tally.cli}, beside {@code tally run}, whose options they share.
 */
package dev.tally.cli.client;
