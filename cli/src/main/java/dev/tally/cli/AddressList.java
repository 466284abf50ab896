package dev.tally.cli;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.function.Function;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The grammar of a list of addresses in one option value, the one owner of it: several coordinators of one
 * store, given to whoever must find the one that leads ({@code tally worker --coordinator a:7070,b:7070},
 * {@code tally submit --server http://a:7071,http://b:7071}). Entries are separated by commas, with
 * optional spaces around them; none may be empty and none may repeat. Each entry is read by the single
 * address's own converter ({@link HostPort.Converter}; a URL by the client's rules), whose error is
 * quoted with the entry's place in the list.
 *
 * <p>Thread-safety: stateless.
 */
final class AddressList {
  /** Most addresses one list may name: a handful of coordinators share a store; more is a mistake. */
  static final int MAX_ADDRESSES = 16;

  private AddressList() {}

  /**
   * Splits {@code value} and reads each entry with {@code one}.
   *
   * @param value the option's value
   * @param one reads one entry; throws {@link TypeConversionException} (or {@link IllegalArgumentException})
   *     naming what is wrong with it
   * @return the entries read, in order, at least one
   * @throws TypeConversionException if the list is empty, has an empty entry, more than {@link
   *     #MAX_ADDRESSES}, a repeated entry, or an entry {@code one} refuses (its position named)
   */
  static <T> List<T> parse(String value, Function<String, T> one) {
    String[] parts = value.split(",", -1);
    if (parts.length > MAX_ADDRESSES) {
      throw new TypeConversionException("'" + value + "' lists " + parts.length + " addresses; at most " + MAX_ADDRESSES);
    }
    List<T> out = new ArrayList<>(parts.length);
    for (int i = 0; i < parts.length; i++) {
      String part = parts[i].strip();
      if (part.isEmpty()) {
        throw new TypeConversionException("'" + value + "': address " + (i + 1) + " of " + parts.length
            + " is empty (addresses are separated by single commas)");
      }
      try {
        out.add(one.apply(part));
      } catch (TypeConversionException | IllegalArgumentException e) {
        throw new TypeConversionException(parts.length == 1 ? e.getMessage()
            : "address " + (i + 1) + " of " + parts.length + ": " + e.getMessage());
      }
    }
    if (new HashSet<>(out).size() != out.size()) {
      throw new TypeConversionException("'" + value + "' names one address twice");
    }
    return List.copyOf(out);
  }

  /**
   * A list of {@code HOST:PORT} ({@code --coordinator a:7070,b:7070}): a value of its own, so that picocli
   * hands the whole option value to {@link Converter}.
   *
   * @param all the addresses, in order, at least one
   */
  record HostPorts(List<HostPort> all) {
    /** The first address. */
    HostPort first() {
      return all.get(0);
    }

    @Override
    public String toString() {
      return String.join(",", all.stream().map(HostPort::toString).toList());
    }

    /** Reads the list. */
    static final class Converter implements ITypeConverter<HostPorts> {
      @Override
      public HostPorts convert(String value) {
        HostPort.Converter one = new HostPort.Converter();
        return new HostPorts(parse(value, one::convert));
      }
    }
  }
}
