package dev.leases.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.LeaseStoreClosedException;
import dev.leases.LeaseStoreUnavailableException;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.ConnectException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The call discipline without a server: deadlines, retries, budgets, error mapping. */
class CallsTest {

  @Test
  void unaryAndKeepAliveCallsGetADeadlineWatchStreamsDoNot() {
    Calls.DeadlineInterceptor interceptor = new Calls.DeadlineInterceptor(Duration.ofSeconds(3));
    AtomicReference<CallOptions> seen = new AtomicReference<>();
    Channel channel = new Channel() {
      @Override
      public <Q, R> ClientCall<Q, R> newCall(MethodDescriptor<Q, R> m, CallOptions o) {
        seen.set(o);
        return null;
      }

      @Override
      public String authority() {
        return "test";
      }
    };
    for (String method : new String[] {"etcdserverpb.KV/Txn", "etcdserverpb.KV/Range",
        "etcdserverpb.Lease/LeaseGrant", "etcdserverpb.Lease/LeaseKeepAlive"}) {
      interceptor.interceptCall(method(method), CallOptions.DEFAULT, channel);
      assertThat(seen.get().getDeadline()).as(method).isNotNull();
      assertThat(seen.get().getDeadline().timeRemaining(TimeUnit.MILLISECONDS))
          .isBetween(1L, 3000L);
    }
    interceptor.interceptCall(method("etcdserverpb.Watch/Watch"), CallOptions.DEFAULT, channel);
    assertThat(seen.get().getDeadline()).isNull();
    CallOptions own = CallOptions.DEFAULT.withDeadlineAfter(100, TimeUnit.MILLISECONDS);
    interceptor.interceptCall(method("etcdserverpb.KV/Range"), own, channel);
    assertThat(seen.get()).as("a deadline already set is kept").isSameAs(own);
  }

  private static MethodDescriptor<String, String> method(String fullName) {
    MethodDescriptor.Marshaller<String> m = new MethodDescriptor.Marshaller<>() {
      @Override
      public InputStream stream(String value) {
        return new ByteArrayInputStream(new byte[0]);
      }

      @Override
      public String parse(InputStream stream) {
        return "";
      }
    };
    return MethodDescriptor.<String, String>newBuilder()
        .setType(fullName.endsWith("/Watch") || fullName.endsWith("/LeaseKeepAlive")
            ? MethodDescriptor.MethodType.BIDI_STREAMING : MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(fullName).setRequestMarshaller(m).setResponseMarshaller(m).build();
  }

  @Test
  void unavailableIsRetriedWithinTheBudgetOtherErrorsAreNot() {
    Calls calls = new Calls(Duration.ofSeconds(5), () -> false, "http://test:2379");
    AtomicInteger attempts = new AtomicInteger();
    String result = calls.retrying(() -> attempts.incrementAndGet() < 3
        ? CompletableFuture.failedFuture(EtcdExceptionFactory.toEtcdException(
            Status.UNAVAILABLE.withDescription("etcdserver: no leader")))
        : CompletableFuture.completedFuture("ok"), calls.budget(), "test");
    assertThat(result).isEqualTo("ok");
    assertThat(attempts).hasValue(3);

    AtomicInteger notFound = new AtomicInteger();
    assertThatThrownBy(() -> calls.retrying(() -> {
      notFound.incrementAndGet();
      return CompletableFuture.failedFuture(EtcdExceptionFactory.toEtcdException(
          Status.NOT_FOUND.withDescription("etcdserver: requested lease not found")));
    }, calls.budget(), "test"))
        .isInstanceOfSatisfying(LeaseStoreUnavailableException.class,
            e -> assertThat(Calls.code(e)).isEqualTo(ErrorCode.NOT_FOUND));
    assertThat(notFound).hasValue(1);

    AtomicInteger once = new AtomicInteger();
    assertThatThrownBy(() -> calls.once(() -> {
      once.incrementAndGet();
      return CompletableFuture.failedFuture(EtcdExceptionFactory.toEtcdException(
          Status.UNAVAILABLE));
    }, calls.budget(), "test")).isInstanceOf(LeaseStoreUnavailableException.class);
    assertThat(once).hasValue(1);
  }

  /** The client's gRPC deadline and our own wait are both callTimeout: either may fire first. */
  @Test
  void aGrpcDeadlineReadsLikeOurOwnTimeout() {
    Calls calls = new Calls(Duration.ofSeconds(5), () -> false, "http://test:2379");
    assertThatThrownBy(() -> calls.retrying(() -> CompletableFuture.failedFuture(
        new StatusRuntimeException(Status.DEADLINE_EXCEEDED.withDescription(
            "CallOptions deadline exceeded after 4.99s"))), calls.budget(), "test"))
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("did not answer 'test' within the call timeout of PT5S")
        .hasMessageContaining("outcome unknown").hasMessageContaining("raise callTimeout");
  }

  @Test
  void aCallRefusedAConnectionIsNotRetriedAndSaysWhereAndThatItWasNotSent() {
    Calls calls = new Calls(Duration.ofSeconds(30), () -> false, "http://test:2379");
    AtomicInteger attempts = new AtomicInteger();
    long start = System.nanoTime();
    assertThatThrownBy(() -> calls.retrying(() -> {
      attempts.incrementAndGet();
      return CompletableFuture.failedFuture(Status.UNAVAILABLE.withDescription("io exception")
          .withCause(new ConnectException("Connection refused: /127.0.0.1:2379"))
          .asRuntimeException());
    }, calls.budget(), "read lease 'x'"))
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("etcd at http://test:2379 refused connections")
        .hasMessageContaining("/127.0.0.1:2379")
        .hasMessageContaining("'read lease 'x'' was not sent")
        .hasMessageNotContaining("earlier attempt");
    assertThat(attempts).hasValue(1);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));

    AtomicInteger second = new AtomicInteger();
    assertThatThrownBy(() -> calls.retrying(() -> CompletableFuture.failedFuture(
        second.incrementAndGet() == 1
            ? Status.UNAVAILABLE.withDescription("connection reset").asRuntimeException()
            : Status.UNAVAILABLE.withCause(new ConnectException("refused")).asRuntimeException()),
        calls.budget(), "txn"))
        .as("a refusal after a failed attempt does not claim to know that attempt's outcome")
        .hasMessageContaining("refused connections").hasMessageContaining("earlier attempt");
    assertThat(second).hasValue(2);
  }

  @Test
  void aCallThatNeverAnswersIsAbandonedWhenTheBudgetRunsOut() {
    Calls calls = new Calls(Duration.ofMillis(200), () -> false, "http://test:2379");
    CompletableFuture<String> never = new CompletableFuture<>();
    assertThatThrownBy(() -> calls.retrying(() -> never, calls.budget(), "hang"))
        .isInstanceOf(LeaseStoreUnavailableException.class)
        .hasMessageContaining("PT0.2S").hasMessageContaining("outcome unknown")
        .hasMessageContaining("callTimeout");
    assertThat(never).as("the abandoned call is cancelled").isCancelled();
  }

  @Test
  void failuresAfterCloseAreReportedAsClosed() {
    AtomicBoolean closed = new AtomicBoolean();
    Calls calls = new Calls(Duration.ofSeconds(1), closed::get, "http://test:2379");
    closed.set(true);
    assertThatThrownBy(() -> calls.once(() -> CompletableFuture.completedFuture("x"),
        calls.budget(), "after close")).isInstanceOf(LeaseStoreClosedException.class);
  }

  @Test
  void interruptionAbandonsTheCallAndKeepsTheFlag() {
    Calls calls = new Calls(Duration.ofSeconds(5), () -> false, "http://test:2379");
    CompletableFuture<String> never = new CompletableFuture<>();
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> calls.once(() -> never, calls.budget(), "interrupted"))
          .isInstanceOf(LeaseStoreUnavailableException.class).hasMessageContaining("interrupted");
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }
}
