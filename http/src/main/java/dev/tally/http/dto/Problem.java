package dev.tally.http.dto;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * An error, as RFC 9457 problem details ({@code application/problem+json}), with extension members that
 * name the place of the error when it has one.
 *
 * @param type a URI naming the kind of problem ({@code about:blank} for a plain HTTP status, else {@code
 *     urn:tally:problem:NAME}); clients branch on it, never on the title or the detail
 * @param title the kind's short summary, the same for every occurrence
 * @param status the HTTP status
 * @param detail this occurrence, in words a person can act on
 * @param instance the request's path
 * @param field the body field at fault (a JSON pointer such as {@code /settings/maxAttempts}), or absent
 * @param line the body line at fault (1-based), or absent
 * @param header the request header at fault, or absent
 * @param parameter the path or query parameter at fault, or absent
 * @param leader for {@code urn:tally:problem:not-leader}: the base URL of the API of the coordinator that
 *     leads the store, where the request should go instead; absent when that is not known
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Problem(
    String type,
    String title,
    int status,
    String detail,
    String instance,
    String field,
    Long line,
    String header,
    String parameter,
    String leader) {}
