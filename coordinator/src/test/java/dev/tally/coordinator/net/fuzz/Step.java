package dev.tally.coordinator.net.fuzz;

import dev.tally.protocol.Envelope;
import java.nio.ByteBuffer;
import java.util.HexFormat;

/**
 * One thing a fuzzed peer does on its socket: send a well-formed frame, send raw bytes (garbage, a cut
 * frame, an oversized prefix...), or fall silent for a moment. A list of steps is a session script.
 *
 * <p>Each step prints as one short line (a label, not protobuf's multi-line text), so that a shrunk
 * counterexample in jqwik's report reads as a script.
 */
sealed interface Step {

  /** The bytes this step puts on the wire (empty for a pause). */
  byte[] bytes();

  /** A well-formed frame: the 4-byte big-endian length of the Envelope, then the Envelope. */
  record Frame(Envelope envelope, String label) implements Step {
    @Override
    public byte[] bytes() {
      return frame(envelope.toByteArray());
    }

    @Override
    public String toString() {
      return "frame " + label + " (" + envelope.getSerializedSize() + " bytes" + detail() + ")";
    }

    /** The fields the coordinator judges, for the few bodies where they decide the outcome. */
    private String detail() {
      return switch (envelope.getBodyCase()) {
        case HELLO -> {
          var h = envelope.getHello();
          String id = h.getWorkerId();
          yield ": worker_id '" + (id.length() > 20 ? id.substring(0, 20) + "...' (" + id.length() + " chars)" : id + "'")
              + ", name of " + h.getName().length() + " chars, slots " + Integer.toUnsignedString(h.getSlots());
        }
        case RESULT -> {
          var r = envelope.getResult();
          yield ": job " + r.getJobId() + ", token " + Long.toUnsignedString(r.getToken()) + ", " + switch (r.getEndingCase()) {
            case OUTCOME -> "verdict " + r.getOutcome().getVerdictValue() + ", duration_millis "
                + Long.toUnsignedString(r.getOutcome().getDurationMillis());
            case FAILURE -> "failure kind " + r.getFailure().getKindValue();
            case ENDING_NOT_SET -> "no ending";
          };
        }
        default -> "";
      };
    }
  }

  /** Raw bytes, framed or not; the label says how they were made. */
  record Raw(byte[] data, String label) implements Step {
    @Override
    public byte[] bytes() {
      return data;
    }

    @Override
    public String toString() {
      int n = Math.min(24, data.length);
      return "raw " + label + " (" + data.length + " bytes: " + HexFormat.ofDelimiter(" ").formatHex(data, 0, n)
          + (data.length > n ? " ..." : "") + ")";
    }
  }

  /** Silence: nothing is sent for a moment (a slow or stalled peer; splits what the server reads). */
  record Pause(int millis) implements Step {
    @Override
    public byte[] bytes() {
      return new byte[0];
    }

    @Override
    public String toString() {
      return "pause " + millis + "ms";
    }
  }

  /** {@code body} with its length prefix, written independently of FrameCodec. */
  static byte[] frame(byte[] body) {
    return ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body).array();
  }
}
