package dev.leases.tck.process;

import dev.leases.LeaseStoreFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The command line of a child JVM that opens a store: {@code --factory=CLASS},
 * {@code --setting=KEY=VALUE} for each store setting, and {@code --KEY=VALUE} options of its own.
 * One format for every child (the kit's holder, the benchmark's workers), written by
 * {@link #format} in the parent and read by {@link #parse} in the child.
 */
public record ChildArgs(StoreRecipe recipe, Map<String, String> options) {

  /** Copies the options. */
  public ChildArgs {
    options = Map.copyOf(options);
  }

  /** The arguments that {@link #parse} turns back into {@code recipe} and {@code options}. */
  public static List<String> format(StoreRecipe recipe, Map<String, String> options) {
    List<String> args = new ArrayList<>();
    args.add("--factory=" + recipe.factory().getName());
    recipe.settings().forEach((k, v) -> args.add("--setting=" + k + "=" + v));
    options.forEach((k, v) -> {
      if (k.equals("factory") || k.equals("setting") || k.contains("=")) {
        throw new IllegalArgumentException("option name '" + k + "' is reserved or contains '='");
      }
      args.add("--" + k + "=" + v);
    });
    return args;
  }

  /**
   * Reads the arguments the kit passed to a child JVM.
   *
   * @throws IllegalArgumentException for a malformed argument
   */
  public static ChildArgs parse(String[] args) {
    Map<String, String> settings = new HashMap<>();
    Map<String, String> options = new HashMap<>();
    String factory = null;
    for (String a : args) {
      int eq = a.indexOf('=');
      if (!a.startsWith("--") || eq < 0) {
        throw new IllegalArgumentException("unknown argument " + a + "; expected --KEY=VALUE");
      }
      String key = a.substring(2, eq);
      String value = a.substring(eq + 1);
      if (key.equals("factory")) {
        factory = value;
      } else if (key.equals("setting")) {
        int kv = value.indexOf('=');
        if (kv < 0) {
          throw new IllegalArgumentException("--setting needs KEY=VALUE, got " + value);
        }
        settings.put(value.substring(0, kv), value.substring(kv + 1));
      } else {
        options.put(key, value);
      }
    }
    if (factory == null) {
      throw new IllegalArgumentException("--factory=CLASS is required");
    }
    return new ChildArgs(new StoreRecipe(factoryClass(factory), settings), options);
  }

  /** The option {@code key}; an {@link IllegalArgumentException} names it if it is missing. */
  public String require(String key) {
    String v = options.get(key);
    if (v == null) {
      throw new IllegalArgumentException("--" + key + "=... is required");
    }
    return v;
  }

  /**
   * The option {@code key} as a number.
   *
   * @throws IllegalArgumentException if it is missing
   */
  public long requireLong(String key) {
    return Long.parseLong(require(key));
  }

  /** The option {@code key} as a number, or {@code orElse} if it is not set. */
  public long longOr(String key, long orElse) {
    String v = options.get(key);
    return v == null ? orElse : Long.parseLong(v);
  }

  private static Class<? extends LeaseStoreFactory> factoryClass(String name) {
    try {
      return Class.forName(name).asSubclass(LeaseStoreFactory.class);
    } catch (ClassNotFoundException | ClassCastException e) {
      throw new IllegalArgumentException(name + " is not a LeaseStoreFactory on the class path", e);
    }
  }
}
