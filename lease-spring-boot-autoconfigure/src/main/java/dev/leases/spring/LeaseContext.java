package dev.leases.spring;

import dev.leases.once.RunContext;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The fencing token of the {@link RunOnce} or {@link OnlyWhileLeader} call running on this
 * thread. Bound for the duration of the call on the calling thread only: work handed to other
 * threads must take the token with it ({@code long token = LeaseContext.currentToken();}).
 */
public final class LeaseContext {

  /** What is bound: the lease, its token, and the run when it is a {@link RunOnce} call. */
  public record Binding(String lease, long token, @Nullable RunContext run) {}

  private static final ThreadLocal<Binding> CURRENT = new ThreadLocal<>();

  private LeaseContext() {}

  /**
   * The token of the call running on this thread.
   *
   * @throws IllegalStateException outside a {@link RunOnce} or {@link OnlyWhileLeader} call
   */
  public static long currentToken() {
    return require().token();
  }

  /** The binding of the call running on this thread, if any. */
  public static Optional<Binding> current() {
    return Optional.ofNullable(CURRENT.get());
  }

  /** The run of the {@link RunOnce} call running on this thread, if any. */
  public static Optional<RunContext> currentRun() {
    return current().map(Binding::run);
  }

  private static Binding require() {
    Binding b = CURRENT.get();
    if (b == null) {
      throw new IllegalStateException("no lease is bound to this thread: LeaseContext works inside"
          + " a method annotated @RunOnce or @OnlyWhileLeader (called through its Spring proxy),"
          + " on the thread that runs it");
    }
    return b;
  }

  /** Binds {@code binding} until the returned scope is closed; restores what was bound before. */
  static Scope bind(Binding binding) {
    Binding previous = CURRENT.get();
    CURRENT.set(binding);
    return () -> {
      if (previous == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(previous);
      }
    };
  }

  /** Ends a binding. */
  interface Scope extends AutoCloseable {
    @Override
    void close();
  }
}
