package dev.leases.spi;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStore;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listeners behind {@link LeaseStore#onRelease}, by lease name, for store implementations:
 * registration, idempotent unsubscription, and dispatch in which a listener that throws is logged
 * and stays subscribed. How hints arrive (NOTIFY, pub/sub, a watch) is the store's business.
 * Thread-safe.
 */
public final class ReleaseListeners {

  private static final Logger log = LoggerFactory.getLogger(ReleaseListeners.class);

  /** An empty set of listeners. */
  public ReleaseListeners() {}

  private final Map<String, List<Runnable>> byName = new ConcurrentHashMap<>();

  /** Registers {@code listener} for {@code name}; closing the result unregisters it (idempotent). */
  public LeaseStore.Subscription add(String name, Runnable listener) {
    LeaseArguments.requireName(name);
    Objects.requireNonNull(listener, "listener must not be null");
    byName.compute(name, (n, list) -> {
      List<Runnable> l = list == null ? new CopyOnWriteArrayList<>() : list;
      l.add(listener);
      return l;
    });
    AtomicBoolean removed = new AtomicBoolean();
    return () -> {
      if (removed.compareAndSet(false, true)) {
        byName.computeIfPresent(name, (n, list) -> {
          list.remove(listener);
          return list.isEmpty() ? null : list;
        });
      }
    };
  }

  /** Runs {@code name}'s listeners on the calling thread. */
  public void fire(String name) {
    fire(name, Runnable::run);
  }

  /** Hands each of {@code name}'s listeners to {@code executor}; stops if it rejects (closing). */
  public void fire(String name, Executor executor) {
    List<Runnable> list = byName.get(name);
    if (list == null) {
      return;
    }
    for (Runnable r : list) {
      try {
        executor.execute(() -> runSafely(name, r));
      } catch (RejectedExecutionException closing) {
        return;
      }
    }
  }

  /** Fires every name: for a store that may have missed hints (after a reconnect). */
  public void fireAll() {
    for (String name : byName.keySet()) {
      fire(name);
    }
  }

  /** The names that have listeners now. */
  public Set<String> names() {
    return Set.copyOf(byName.keySet());
  }

  /** Whether {@code name} has a listener now (without copying {@link #names()}). */
  public boolean has(String name) {
    return byName.containsKey(name);
  }

  /** Whether no listener is registered. */
  public boolean isEmpty() {
    return byName.isEmpty();
  }

  /** Drops every listener (on store close). */
  public void clear() {
    byName.clear();
  }

  private static void runSafely(String name, Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("release listener for lease '{}' threw; it stays subscribed", name, e);
    }
  }
}
