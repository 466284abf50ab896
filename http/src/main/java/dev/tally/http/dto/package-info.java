/**
 * The API's JSON shapes, one record per object: what handlers return (Jackson writes them, camelCase,
 * nulls kept where the design says a field is null, e.g. {@code finishedAt} while running) and what the
 * OpenAPI document's schemas are generated from. Built from the store's views by {@link
 * dev.tally.http.ApiViews}, the one mapping.
 */
package dev.tally.http.dto;
