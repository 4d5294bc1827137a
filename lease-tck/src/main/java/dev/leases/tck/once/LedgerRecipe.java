package dev.leases.tck.once;

import dev.leases.once.RunLedger;
import dev.leases.once.RunLedgerFactory;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How a child JVM opens a {@link RunLedger}: a {@link RunLedgerFactory} class with a public no-arg
 * constructor and its settings. It travels as the child's options {@code ledger-factory} and
 * {@code ledger.<setting>}.
 */
public record LedgerRecipe(Class<? extends RunLedgerFactory> factory, Map<String, String> settings) {

  private static final String FACTORY = "ledger-factory";
  private static final String SETTING = "ledger.";

  /** Checks the parts. */
  public LedgerRecipe {
    Objects.requireNonNull(factory, "factory");
    settings = Map.copyOf(settings);
  }

  /** Opens the ledger in this JVM. */
  public RunLedger<?> open() {
    try {
      return factory.getDeclaredConstructor().newInstance().open(settings);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot instantiate " + factory.getName()
          + ": it needs a public no-arg constructor", e);
    }
  }

  /** This recipe as child options, to merge into {@code ChildArgs.format}'s options. */
  public Map<String, String> asOptions() {
    Map<String, String> options = new HashMap<>();
    options.put(FACTORY, factory.getName());
    settings.forEach((k, v) -> options.put(SETTING + k, v));
    return options;
  }

  /** Reads a recipe back from a child's options. */
  public static LedgerRecipe fromOptions(Map<String, String> options) {
    String name = options.get(FACTORY);
    if (name == null) {
      throw new IllegalArgumentException("--" + FACTORY + "=CLASS is required");
    }
    Map<String, String> settings = new HashMap<>();
    options.forEach((k, v) -> {
      if (k.startsWith(SETTING)) {
        settings.put(k.substring(SETTING.length()), v);
      }
    });
    try {
      return new LedgerRecipe(Class.forName(name).asSubclass(RunLedgerFactory.class), settings);
    } catch (ClassNotFoundException | ClassCastException e) {
      throw new IllegalArgumentException(name + " is not a RunLedgerFactory on the class path", e);
    }
  }
}
