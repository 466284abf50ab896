package dev.tally.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * A {@code HOST:PORT} option value; port 0 means "any free port".
 *
 * @param host a host name or IPv4 address ({@code [v6]} brackets accepted)
 * @param port 0 to 65535
 */
public record HostPort(String host, int port) {
  @Override
  public String toString() {
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
  }

  /** Reads {@code HOST:PORT}. */
  public static final class Converter implements ITypeConverter<HostPort> {
    @Override
    public HostPort convert(String value) {
      int colon = value.lastIndexOf(':');
      if (colon <= 0 || colon == value.length() - 1) {
        throw new TypeConversionException("'" + value + "' is not HOST:PORT (e.g. 127.0.0.1:7070)");
      }
      String host = value.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      int port;
      try {
        port = Integer.parseInt(value.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new TypeConversionException("'" + value + "': port must be a number from 0 to 65535");
      }
      if (port < 0 || port > 65535) {
        throw new TypeConversionException("'" + value + "': port must be from 0 to 65535");
      }
      return new HostPort(host, port);
    }
  }
}
