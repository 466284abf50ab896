package dev.tally.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tally.http.dto.Problem;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.handler.ErrorHandler;

/**
 * Jetty's own errors as RFC 9457 problems: those Jetty answers before a request reaches Javalin (a request
 * line or headers too large, a malformed request, a URI it refuses), which it would otherwise answer with
 * an HTML page. Javalin's and the API's errors are {@link ApiServer}'s.
 *
 * <p>Thread-safety: stateless; called on Jetty's threads.
 */
final class JettyProblems extends ErrorHandler {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Override
  protected void generateAcceptableResponse(Request baseRequest, HttpServletRequest request, HttpServletResponse response,
      int code, String message) throws IOException {
    baseRequest.setHandled(true);
    response.setContentType(ApiServer.PROBLEM_JSON);
    response.getOutputStream().write(body(code, message, request.getRequestURI()));
  }

  @Override
  public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
    fields.put(HttpHeader.CONTENT_TYPE, ApiServer.PROBLEM_JSON);
    return ByteBuffer.wrap(body(status, reason, null));
  }

  private static byte[] body(int status, String message, String instance) {
    String title = HttpStatus.getMessage(status);
    Problem p = new Problem("about:blank", title, status, message == null || message.isBlank() ? title : message, instance,
        null, null, null, null, null);
    try {
      return JSON.writeValueAsBytes(p);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("a problem cannot fail to serialize", e);
    }
  }
}
