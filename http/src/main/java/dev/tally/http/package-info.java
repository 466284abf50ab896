/** The HTTP API. */
package dev.tally.http;
