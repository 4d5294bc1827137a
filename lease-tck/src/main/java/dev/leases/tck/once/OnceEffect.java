package dev.leases.tck.once;

import dev.leases.once.RunContext;

/**
 * A business write that {@link RunLedgerTck}'s runs make through the ledger's resource (a JDBC
 * connection, say), so that a transactional ledger can prove the <em>effect</em> happened exactly
 * once: see {@link RunLedgerTck#effect()} and {@link RunLedgerTck#checkEffects}. Implementations
 * have a public no-arg constructor, because child JVMs create them by name.
 */
@FunctionalInterface
public interface OnceEffect {

  /** Writes the effect of (ctx.job(), ctx.run()) under ctx.token() through {@code resource}. */
  void apply(Object resource, RunContext ctx) throws Exception;

  /** Creates the effect named by {@code className} (a public no-arg constructor). */
  static OnceEffect named(String className) {
    try {
      return Class.forName(className).asSubclass(OnceEffect.class).getDeclaredConstructor()
          .newInstance();
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new IllegalArgumentException(className + " is not an OnceEffect with a public no-arg"
          + " constructor", e);
    }
  }
}
