package dev.leases.etcd;

import dev.leases.tck.servers.TestCertificates;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.HolderId;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreUnavailableException;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * TLS failures are fast and say what to fix, against {@link SecureEtcd#withMutualTls()}: an
 * untrusted server certificate, a client without a certificate or with one the server does not
 * trust, TLS files that are missing or not PEM.
 */
class EtcdTlsTest {

  private static final Duration LONG_TIMEOUT = Duration.ofSeconds(20);
  private static SecureEtcd etcd;

  @BeforeAll
  static void server() throws Exception {
    etcd = SecureEtcd.withMutualTls();
  }

  private static void failsFastWith(LeaseStore store, String... fragments) {
    try (store) {
      long start = System.nanoTime();
      var thrown = assertThatThrownBy(() -> store.acquireOrRenew("tls-" + SecureEtcd.random(""),
          HolderId.generate(), Duration.ofSeconds(5)))
          .isInstanceOf(LeaseStoreUnavailableException.class);
      for (String f : fragments) {
        thrown.hasMessageContaining(f);
      }
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .as("fails fast, not after the call timeout of %s", LONG_TIMEOUT)
          .isLessThan(LONG_TIMEOUT.dividedBy(2));
    }
  }

  @Test
  void aServerCertificateFromAnotherAuthorityFailsFastAndSaysSo() {
    failsFastWith(EtcdLeaseStore.builder(etcd.endpoint).callTimeout(LONG_TIMEOUT)
        .tls(etcd.certs.wrongCa(), etcd.certs.clientCert(), etcd.certs.clientKey()).build(),
        "TLS handshake", "was not sent", "trust certificate", etcd.endpoint);
  }

  @Test
  void aClientWithoutACertificateOrWithAnUntrustedOneFailsFast() {
    failsFastWith(EtcdLeaseStore.builder(etcd.endpoint).callTimeout(LONG_TIMEOUT)
        .tls(etcd.certs.ca()).build(), "client certificate");
    failsFastWith(EtcdLeaseStore.builder(etcd.endpoint).callTimeout(LONG_TIMEOUT)
        .tls(etcd.certs.ca(), etcd.certs.wrongClientCert(), etcd.certs.wrongClientKey()).build(),
        "client certificate");
  }

  @Test
  void theRightFilesWorkThroughTheBuilderTheFactoryAndTheLedger() throws Exception {
    String name = SecureEtcd.random("tls-ok-");
    try (LeaseStore store = new EtcdLeaseStoreFactory().open(Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint,
        EtcdLeaseStoreFactory.TRUST_CERT_FILE, etcd.certs.ca().toString(),
        EtcdLeaseStoreFactory.CLIENT_CERT_FILE, etcd.certs.clientCert().toString(),
        EtcdLeaseStoreFactory.CLIENT_KEY_FILE, etcd.certs.clientKey().toString()));
        EtcdRunLedger ledger = new EtcdRunLedgerFactory().open(Map.of(
            EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint,
            EtcdLeaseStoreFactory.TRUST_CERT_FILE, etcd.certs.ca().toString(),
            EtcdLeaseStoreFactory.CLIENT_CERT_FILE, etcd.certs.clientCert().toString(),
            EtcdLeaseStoreFactory.CLIENT_KEY_FILE, etcd.certs.clientKey().toString()))) {
      HolderId h = HolderId.generate();
      long token = store.acquireOrRenew(name, h, Duration.ofSeconds(5)).orElseThrow().token();
      ledger.complete(ledger.begin(name, "r", token, h), none -> {});
      assertThat(ledger.completion(name, "r")).isPresent();
      assertThat(store.release(name, h)).isTrue();
    }
  }

  @Test
  void badTlsSettingsAreRefusedUpFrontByName() throws Exception {
    assertThatThrownBy(() -> EtcdLeaseStore.builder("http://127.0.0.1:2379").tls(etcd.certs.ca())
        .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("https://");
    assertThatThrownBy(() -> EtcdLeaseStore.builder(etcd.endpoint)
        .tls(etcd.certs.dir().resolve("missing.pem")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("missing.pem");
    assertThatThrownBy(() -> new EtcdLeaseStoreFactory().open(Map.of(
        EtcdLeaseStoreFactory.ENDPOINTS, etcd.endpoint,
        EtcdLeaseStoreFactory.CLIENT_CERT_FILE, etcd.certs.clientCert().toString())))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("both");
    // a certificate where the key belongs: not PEM key material
    assertThatThrownBy(() -> EtcdLeaseStore.builder(etcd.endpoint)
        .tls(etcd.certs.ca(), etcd.certs.clientCert(), etcd.certs.clientCert()).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PKCS#8");
    assertThatThrownBy(() -> EtcdLeaseStore.builder(etcd.admin()).tls(etcd.certs.ca()))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("your own jetcd Client");
  }
}
