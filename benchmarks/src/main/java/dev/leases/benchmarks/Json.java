package dev.leases.benchmarks;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The report's JSON, written by Jackson: nested {@link java.util.Map}s (objects, in their iteration
 * order), lists, strings, numbers, booleans and nulls, indented. Non-finite numbers (a percentile of
 * no samples) become {@code null}, since JSON has no NaN.
 */
final class Json {

  /** Two-space objects, {@code "key": value}, number lists on one line, {@code []} and {@code {}}. */
  private static final DefaultPrettyPrinter PRETTY = new DefaultPrettyPrinter(
      Separators.createDefaultInstance().withObjectFieldValueSpacing(Separators.Spacing.AFTER)
          .withArrayEmptySeparator("").withObjectEmptySeparator(""))
      .withObjectIndenter(new DefaultIndenter("  ", "\n"));

  private static final ObjectMapper MAPPER = new ObjectMapper()
      .setDefaultPrettyPrinter(PRETTY)
      .enable(SerializationFeature.INDENT_OUTPUT)
      .registerModule(new SimpleModule("finite-numbers")
          .addSerializer(Double.class, new FiniteOrNull<>(Double::isFinite))
          .addSerializer(double.class, new FiniteOrNull<>(Double::isFinite))
          .addSerializer(Float.class, new FiniteOrNull<>(Float::isFinite))
          .addSerializer(float.class, new FiniteOrNull<>(Float::isFinite)));

  private Json() {}

  static String write(Object value) {
    try {
      return MAPPER.writeValueAsString(value) + "\n";
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("the report cannot be written as JSON: " + e.getMessage(), e);
    }
  }

  /** A number as JSON, or {@code null} when it is not finite. */
  private static final class FiniteOrNull<T extends Number> extends JsonSerializer<T> {
    private final java.util.function.Predicate<T> finite;

    FiniteOrNull(java.util.function.Predicate<T> finite) {
      this.finite = finite;
    }

    @Override
    public void serialize(T v, JsonGenerator g, SerializerProvider p) throws IOException {
      if (!finite.test(v)) {
        g.writeNull();
      } else if (v instanceof Float f) {
        g.writeNumber(f);
      } else {
        g.writeNumber(v.doubleValue());
      }
    }
  }
}
