package dev.leases.consul;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.LeaseStoreUnavailableException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLException;
import org.junit.jupiter.api.Test;
import org.kiwiproject.consul.ConsulException;

/**
 * How a call that failed on a broken connection is explained, given what the agent says when
 * asked on a connection of its own (the question itself is stubbed here; ConsulSecurityTest asks
 * a real agent): CI saw a refused client certificate reported as "could not be reached (Broken
 * pipe)" and as a shut-down HTTP/2 connection under load.
 */
class ConsulCallsTlsRefusalTest {

  private static ConsulCalls calls(ConsulCalls.TlsRefusal refusal) {
    return new ConsulCalls(Duration.ofSeconds(5), "Consul at https://127.0.0.1:1", 2, "p",
        refusal);
  }

  private static Object fail(Exception io) {
    throw new ConsulException("Error connecting to Consul", io);
  }

  @Test
  void aBrokenConnectionThatTheAgentExplainsAsARefusedCertificateIsNamedSo() {
    AtomicInteger asked = new AtomicInteger();
    ConsulCalls c = calls(bound -> {
      asked.incrementAndGet();
      assertThat(bound).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(2));
      return new SSLException("Received fatal alert: certificate_required");
    });
    try {
      assertThatThrownBy(() -> c.run("inspect('x')", () -> fail(new SocketException("Broken pipe"))))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("Broken pipe")
          .hasMessageContaining("certificate_required")
          .hasMessageContaining("The agent refused this client's certificate")
          .hasMessageContaining("verify_incoming");
      assertThat(asked).hasValue(1);
    } finally {
      c.close();
    }
  }

  @Test
  void otherwiseTheFailureStandsAndTimeoutsAndRefusedConnectionsAreNotFollowedUp() {
    AtomicInteger asked = new AtomicInteger();
    ConsulCalls c = calls(bound -> {
      asked.incrementAndGet();
      return null;
    });
    try {
      assertThatThrownBy(() -> c.run("inspect('x')", () -> fail(new SocketException("Broken pipe"))))
          .isInstanceOf(LeaseStoreUnavailableException.class)
          .hasMessageContaining("could not be reached (java.net.SocketException: Broken pipe)")
          .hasMessageNotContaining("certificate");
      assertThat(asked).hasValue(1);
      assertThatThrownBy(() -> c.run("inspect('x')", () -> fail(new SocketTimeoutException("t"))))
          .isInstanceOf(LeaseStoreUnavailableException.class).hasMessageContaining("t");
      assertThatThrownBy(() -> c.run("inspect('x')", () -> fail(new ConnectException("refused"))))
          .isInstanceOf(LeaseStoreUnavailableException.class).hasMessageContaining("refused");
      assertThat(asked).as("neither a timeout nor a refused connection asks again").hasValue(1);
    } finally {
      c.close();
    }
  }
}
