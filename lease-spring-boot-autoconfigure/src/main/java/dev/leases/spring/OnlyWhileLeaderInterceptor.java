package dev.leases.spring;

import dev.leases.leader.LeaderLoop;
import java.lang.reflect.Method;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Runs {@link OnlyWhileLeader} methods only while their leader loop leads, with
 * {@link LeaseContext} bound to the token read at the start; skips them otherwise.
 */
public final class OnlyWhileLeaderInterceptor implements MethodInterceptor {

  private final Supplier<LeaderLoops> loops;

  /** Answers from the loops {@code loops} supplies, looked up on first use. */
  public OnlyWhileLeaderInterceptor(Supplier<LeaderLoops> loops) {
    this.loops = loops;
  }

  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Class<?> target = invocation.getThis() != null
        ? AopUtils.getTargetClass(invocation.getThis()) : method.getDeclaringClass();
    OnlyWhileLeader a = AnnotatedElementUtils.findMergedAnnotation(
        AopUtils.getMostSpecificMethod(method, target), OnlyWhileLeader.class);
    if (a == null) {
      return invocation.proceed();
    }
    LeaderLoop loop;
    try {
      loop = loops.get().get(a.value());
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("@OnlyWhileLeader on " + method + ": " + e.getMessage(), e);
    }
    long token = loop.currentToken();
    if (token == 0) {
      return RunOnceInterceptor.Skipped.value(method.getReturnType());
    }
    try (LeaseContext.Scope scope =
        LeaseContext.bind(new LeaseContext.Binding(a.value(), token, null))) {
      return invocation.proceed();
    }
  }
}
