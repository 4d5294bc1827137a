package dev.leases.tck.process;

import dev.leases.LeaseStoreFactory;
import java.util.Map;
import java.util.Objects;

/**
 * How another JVM opens a client of the same backend: a factory class with a public no-arg
 * constructor, and its settings.
 */
public record StoreRecipe(Class<? extends LeaseStoreFactory> factory, Map<String, String> settings) {

  /** Checks the parts and copies the settings. */
  public StoreRecipe {
    Objects.requireNonNull(factory, "factory");
    settings = Map.copyOf(settings);
    for (Map.Entry<String, String> e : settings.entrySet()) {
      if (e.getKey().contains("=") || e.getKey().isBlank()) {
        throw new IllegalArgumentException("setting name '" + e.getKey() + "' must be non-blank"
            + " and must not contain '='");
      }
    }
  }

  /** Opens a store in this JVM (what the child does). */
  public dev.leases.LeaseStore open() {
    try {
      return factory.getDeclaredConstructor().newInstance().open(settings);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot instantiate " + factory.getName()
          + ": it needs a public no-arg constructor", e);
    }
  }
}
