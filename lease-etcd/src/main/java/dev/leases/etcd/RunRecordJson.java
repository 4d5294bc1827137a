package dev.leases.etcd;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.leases.HolderId;
import dev.leases.once.RunRecord;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import org.jspecify.annotations.Nullable;

/**
 * A {@link RunRecord} as {@link EtcdRunLedger} stores it: one UTF-8 JSON object (Jackson's
 * streaming API, which jetcd's Vert.x already brings), e.g.
 * {@code {"v":1,"job":"j","run":"r","attempt":42,"token":7,"holder":"h","status":"COMPLETED",
 * "started":"2026-01-31T00:00:00.123456Z","finished":"...","failure":"..."}}. Times are ISO-8601
 * instants; {@code finished} and {@code failure} are absent while they are null. Unknown fields are
 * ignored, so a later version may add some.
 */
final class RunRecordJson {

  private static final JsonFactory JSON = JsonFactory.builder().build();
  private static final int VERSION = 1;

  private RunRecordJson() {}

  static byte[] write(RunRecord r) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeNumberField("v", VERSION);
      g.writeStringField("job", r.job());
      g.writeStringField("run", r.run());
      g.writeNumberField("attempt", r.attempt());
      g.writeNumberField("token", r.token());
      g.writeStringField("holder", r.holder().value());
      g.writeStringField("status", r.status().name());
      g.writeStringField("started", r.started().toString());
      if (r.finished() != null) {
        g.writeStringField("finished", r.finished().toString());
      }
      if (r.failure() != null) {
        g.writeStringField("failure", r.failure());
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a run record as JSON", e);
    }
    return out.toByteArray();
  }

  /**
   * Reads a record stored under {@code key}.
   *
   * @throws IllegalStateException naming {@code key} if the value is not such a record
   */
  static RunRecord read(byte[] json, String key) {
    String job = null;
    String run = null;
    String holder = null;
    String status = null;
    String started = null;
    String finished = null;
    String failure = null;
    Long attempt = null;
    Long token = null;
    Long version = null;
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw notARecord(key, "not a JSON object", null);
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        switch (field) {
          case "v" -> version = number(p, value, key, field);
          case "job" -> job = text(p, value, key, field);
          case "run" -> run = text(p, value, key, field);
          case "attempt" -> attempt = number(p, value, key, field);
          case "token" -> token = number(p, value, key, field);
          case "holder" -> holder = text(p, value, key, field);
          case "status" -> status = text(p, value, key, field);
          case "started" -> started = text(p, value, key, field);
          case "finished" -> finished = text(p, value, key, field);
          case "failure" -> failure = text(p, value, key, field);
          default -> p.skipChildren();
        }
      }
      if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
        throw notARecord(key, "not one JSON object", null);
      }
    } catch (IOException e) {
      throw notARecord(key, "not JSON: " + e.getMessage(), e);
    }
    if (version == null || version != VERSION) {
      throw notARecord(key, "format version " + version + ", this library reads " + VERSION, null);
    }
    if (job == null || run == null || attempt == null || token == null || holder == null
        || status == null || started == null) {
      throw notARecord(key, "a required field is missing", null);
    }
    try {
      return new RunRecord(job, run, attempt, token, new HolderId(holder), Instant.parse(started),
          finished == null ? null : Instant.parse(finished), RunRecord.Status.valueOf(status),
          failure);
    } catch (IllegalArgumentException | DateTimeParseException e) {
      throw notARecord(key, e.getMessage(), e);
    }
  }

  private static String text(JsonParser p, JsonToken t, String key, String field)
      throws IOException {
    if (t != JsonToken.VALUE_STRING) {
      throw notARecord(key, "field '" + field + "' is not a string", null);
    }
    return p.getText();
  }

  private static Long number(JsonParser p, JsonToken t, String key, String field)
      throws IOException {
    if (t != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT
        && p.getNumberType() != JsonParser.NumberType.LONG) {
      throw notARecord(key, "field '" + field + "' is not a whole number", null);
    }
    return p.getLongValue();
  }

  private static IllegalStateException notARecord(String key, @Nullable String why,
      @Nullable Throwable cause) {
    return new IllegalStateException("etcd key '" + LastTenure.abbreviate(key) + "' does not hold"
        + " a run record written by EtcdRunLedger (" + why + "); delete it, or give the ledger a"
        + " keyPrefix that nothing else writes under", cause);
  }
}
