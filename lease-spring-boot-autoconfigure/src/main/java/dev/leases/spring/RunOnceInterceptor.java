package dev.leases.spring;

import dev.leases.LeaseArguments;
import dev.leases.LeaseStore;
import dev.leases.once.ExactlyOnce;
import dev.leases.once.RunFailedException;
import dev.leases.once.RunKeys;
import dev.leases.once.RunLedger;
import dev.leases.once.RunOutcome;
import java.lang.reflect.Method;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.format.datetime.standard.DurationFormatterUtils;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * Runs {@link RunOnce} methods through {@link ExactlyOnce}: one runner per job-lease TTL, built on
 * first use from the context's {@link LeaseStore} and {@link RunLedger}, closed with the context.
 * Each method's settings (job, run key, TTL) are read and checked on its first call, with messages
 * that name the method.
 */
public final class RunOnceInterceptor implements MethodInterceptor, DisposableBean {

  private static final Logger log = LoggerFactory.getLogger(RunOnceInterceptor.class);

  private final Supplier<LeaseStore> store;
  private final Supplier<RunLedger<?>> ledger;
  private final Duration defaultTtl;
  private final @Nullable ConfigurableBeanFactory beanFactory;
  private final RunRecorder recorder;
  private final Clock clock;
  private final Map<Method, Plan> plans = new ConcurrentHashMap<>();
  private final Map<Duration, ExactlyOnce<Object>> runners = new ConcurrentHashMap<>();
  private final SpelExpressionParser parser = new SpelExpressionParser();
  private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();

  /** Runs annotated methods once per run key; the suppliers are read on first use. */
  public RunOnceInterceptor(Supplier<LeaseStore> store, Supplier<RunLedger<?>> ledger,
      Duration defaultTtl, @Nullable ConfigurableBeanFactory beanFactory,
      @Nullable RunRecorder recorder, Clock clock) {
    this.store = store;
    this.ledger = ledger;
    this.defaultTtl = defaultTtl;
    this.beanFactory = beanFactory;
    this.recorder = recorder != null ? recorder : RunRecorder.NONE;
    this.clock = clock;
  }

  private record Plan(String job, @Nullable Expression run, @Nullable DateTimeFormatter format,
      Optional<FireTimes> fire, Duration ttl, Method method) {}

  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Class<?> target = invocation.getThis() != null
        ? AopUtils.getTargetClass(invocation.getThis()) : method.getDeclaringClass();
    Method specific = AopUtils.getMostSpecificMethod(method, target);
    Plan plan = plans.computeIfAbsent(specific, this::plan);
    String run = runKey(plan, invocation);
    ExactlyOnce<Object> once = runners.computeIfAbsent(plan.ttl, this::runner);
    Object[] result = new Object[1];
    RunOutcome outcome;
    try {
      outcome = recorder.record(plan.job, () -> once.run(plan.job, run, (resource, ctx) -> {
        try (LeaseContext.Scope scope = LeaseContext.bind(
            new LeaseContext.Binding(RunKeys.leaseName(ctx.job()), ctx.token(), ctx))) {
          result[0] = invocation.proceed();
        } catch (Exception | Error e) {
          throw e;
        } catch (Throwable t) {
          throw new IllegalStateException(t);
        }
      }));
    } catch (RunFailedException e) {
      throw e.getCause(); // the method's own exception, as it threw it
    }
    if (outcome instanceof RunOutcome.Completed) {
      return result[0];
    }
    log.debug("@RunOnce {}: run '{}' of job '{}' not run here: {}", specific, run, plan.job,
        outcome);
    return Skipped.value(method.getReturnType());
  }

  private ExactlyOnce<Object> runner(Duration ttl) {
    @SuppressWarnings("unchecked")
    RunLedger<Object> l = (RunLedger<Object>) ledger.get();
    return ExactlyOnce.builder(store.get(), l).ttl(ttl).build();
  }

  private Plan plan(Method method) {
    RunOnce a = AnnotatedElementUtils.findMergedAnnotation(method, RunOnce.class);
    if (a == null) {
      throw new IllegalStateException("no @RunOnce on " + method);
    }
    try {
      String job = RunKeys.checkJob(resolve(a.job()));
      Expression run = a.run().isEmpty() ? null : parser.parseExpression(a.run());
      Optional<FireTimes> fire = FireTimes.of(method, this::resolve);
      if (run == null && fire.isEmpty()) {
        throw new IllegalArgumentException("it has no run expression and no @Scheduled cron,"
            + " fixedRate or fixedDelay to derive run keys from: give @RunOnce(run = \"...\")");
      }
      ZoneId zone = !a.zone().isEmpty() ? ZoneId.of(resolve(a.zone()))
          : fire.map(FireTimes::zone).orElse(ZoneId.systemDefault());
      DateTimeFormatter format = a.runKey().isEmpty() ? null
          : DateTimeFormatter.ofPattern(resolve(a.runKey())).withZone(zone);
      Duration ttl = a.ttl().isEmpty() ? defaultTtl : DurationFormatterUtils.detectAndParse(resolve(a.ttl()));
      LeaseArguments.requirePositive("ttl", ttl);
      return new Plan(job, run, format, fire, ttl, method);
    } catch (RuntimeException e) {
      throw new IllegalStateException("@RunOnce on " + method + ": " + e.getMessage(), e);
    }
  }

  private String resolve(String value) {
    String resolved = beanFactory != null ? beanFactory.resolveEmbeddedValue(value) : value;
    return resolved == null ? value : resolved;
  }

  private String runKey(Plan plan, MethodInvocation invocation) {
    Instant now = clock.instant();
    Instant fireTime = plan.fire.map(f -> f.fireTime(now)).orElse(now);
    if (plan.run != null) {
      MethodBasedEvaluationContext ctx = new MethodBasedEvaluationContext(fireTime, plan.method,
          invocation.getArguments(), names);
      ctx.setVariable("fireTime", fireTime);
      if (beanFactory != null) {
        ctx.setBeanResolver(new BeanFactoryResolver(beanFactory));
      }
      Object value = plan.run.getValue(ctx);
      if (value == null) {
        throw new IllegalStateException("@RunOnce on " + plan.method + ": run expression '"
            + plan.run.getExpressionString() + "' gave null; it must give the run key");
      }
      return value.toString();
    }
    return plan.format != null ? plan.format.format(fireTime) : fireTime.toString();
  }

  @Override
  public void destroy() {
    runners.values().forEach(ExactlyOnce::close);
    runners.clear();
  }

  /** The value a skipped call returns. */
  static final class Skipped {
    private Skipped() {}

    static @Nullable Object value(Class<?> type) {
      if (!type.isPrimitive() || type == void.class) {
        return null;
      }
      if (type == boolean.class) {
        return false;
      }
      if (type == char.class) {
        return '\0';
      }
      if (type == long.class) {
        return 0L;
      }
      if (type == double.class) {
        return 0d;
      }
      if (type == float.class) {
        return 0f;
      }
      if (type == short.class) {
        return (short) 0;
      }
      if (type == byte.class) {
        return (byte) 0;
      }
      return 0;
    }
  }
}
