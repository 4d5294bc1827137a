package dev.leases.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The CLI's commands against a real key-value store (etcd, Consul), run in-process, under a key
 * prefix of the subclass's own: what an operator does with {@code inspect}, {@code token},
 * {@code watch}, {@code release} and {@code list}, and what an unreachable endpoint tells them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class KeyValueCliTest {

  /** Where nothing listens. */
  private static final String UNREACHABLE = "http://127.0.0.1:1";

  private final String prefix = "cli-" + UUID.randomUUID().toString().substring(0, 8);
  private LeaseStore store;

  /** A store on the test server under {@code keyPrefix}, as the applications would open it. */
  abstract LeaseStore open(String keyPrefix);

  /** The test server's endpoint, as the CLI takes it. */
  abstract String endpoint();

  /** {@code --store} and the option that names {@code endpoint}. */
  abstract List<String> storeArgs(String endpoint);

  @BeforeAll
  void start() {
    store = open(prefix);
  }

  @AfterAll
  void stop() {
    store.close();
  }

  LeaseStore store() {
    return store;
  }

  private List<String> storeArgs() {
    List<String> all = new ArrayList<>(storeArgs(endpoint()));
    all.addAll(List.of("--key-prefix", prefix));
    return all;
  }

  private String[] args(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(storeArgs());
    return all.toArray(String[]::new);
  }

  CliRun cli(String... args) {
    return CliRun.run(args(args));
  }

  static String name() {
    return "cli-" + UUID.randomUUID();
  }

  private LeaseGrant hold(String name, Duration ttl) {
    return store().acquireOrRenew(name, HolderId.generate(), ttl).orElseThrow();
  }

  @Test
  void inspectShowsTheHolderTokenAndExpiryAsTextAndJson() {
    String n = name();
    LeaseGrant g = hold(n, Duration.ofMinutes(1));

    CliRun r = cli("inspect", n, "--json");
    assertThat(r.code()).as(r.toString()).isZero();
    JsonNode j = r.json();
    assertThat(j.get("name").asText()).isEqualTo(n);
    assertThat(j.get("status").asText()).isEqualTo("HELD");
    assertThat(j.get("holder").asText()).isEqualTo(g.holder().value());
    assertThat(j.get("lastToken").asLong()).isEqualTo(g.token());
    assertThat(j.get("remainingMillis").asLong()).isBetween(1L, 61_000L);

    CliRun text = cli("inspect", n);
    assertThat(text.code()).as(text.toString()).isZero();
    assertThat(text.out()).contains(n, "HELD", g.holder().value(), "token " + g.token());

    CliRun free = cli("inspect", name(), "--json");
    assertThat(free.code()).as(free.toString()).isZero();
    assertThat(free.json().get("status").asText()).isEqualTo("FREE");
  }

  @Test
  void tokenPrintsTheLatestGrantsToken() {
    String n = name();
    LeaseGrant g = hold(n, Duration.ofMinutes(1));

    CliRun r = cli("token", n);
    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.out().trim()).isEqualTo(Long.toString(g.token()));
    assertThat(cli("token", n, "--json").json().get("token").asLong()).isEqualTo(g.token());
  }

  @Test
  void watchPrintsTheChangeWokenByTheReleaseHint() throws Exception {
    String n = name();
    HolderId first = HolderId.generate();
    store().acquireOrRenew(n, first, Duration.ofMinutes(10)).orElseThrow();
    // A 10 min lease and a 60 s poll: within the wait, only the release hint can wake the watch.
    CliRun.assertReleaseHintWakesWatch(n, storeArgs(), () -> store().release(n, first));
  }

  @Test
  void releaseIsRefusedWithoutForceAndDoneWithItAndLaterTokensAreLarger() {
    String n = name();
    LeaseGrant g = hold(n, Duration.ofMinutes(1));

    CliRun refused = cli("release", n);
    assertThat(refused.code()).as(refused.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(refused.err()).contains("--force");
    assertThat(store().inspect(n)).isInstanceOf(LeaseState.Held.class);

    CliRun r = cli("release", n, "--force", "--json");
    assertThat(r.code()).as(r.toString()).isZero();
    JsonNode j = r.json();
    assertThat(j.get("released").asBoolean()).isTrue();
    assertThat(j.get("holder").asText()).isEqualTo(g.holder().value());
    assertThat(j.get("token").asLong()).isEqualTo(g.token());
    assertThat(j.get("now").get("status").asText()).isEqualTo("FREE");
    assertThat(r.err()).contains("warning", "may still be writing", "fencing tokens");
    assertThat(store().inspect(n)).isInstanceOf(LeaseState.Free.class);

    CliRun again = cli("release", n, "--force");
    assertThat(again.code()).as(again.toString()).isEqualTo(ExitCodes.REFUSED);
    assertThat(again.err()).contains("FREE", "nothing to release");
    LeaseGrant next = hold(n, Duration.ofMinutes(1));
    assertThat(next.token()).as("the grant after the forced release").isGreaterThan(g.token());
    assertThat(cli("token", n).out().trim()).isEqualTo(Long.toString(next.token()));
  }

  /** {@code list --prefix P [--limit N] [--json]}: each listed name's state, in list order. */
  @Test
  void listShowsTheNamesWithThePrefixAndTheirStatesInOrder() {
    String prefix = "list-" + UUID.randomUUID() + "/";
    HolderId holder = HolderId.generate();
    store().acquireOrRenew(prefix + "b", holder, Duration.ofMinutes(1)).orElseThrow();
    store().acquireOrRenew(prefix + "a", holder, Duration.ofMinutes(1)).orElseThrow();
    store().acquireOrRenew(prefix + "a/1", holder, Duration.ofMinutes(1)).orElseThrow();
    assertThat(store().release(prefix + "a", holder)).isTrue();
    hold(name(), Duration.ofMinutes(1));

    CliRun r = cli("list", "--prefix", prefix, "--json");

    assertThat(r.code()).as(r.toString()).isZero();
    assertThat(r.jsonLines()).extracting(j -> j.get("name").asText() + " " + j.get("status").asText())
        .containsExactly(prefix + "a FREE", prefix + "a/1 HELD", prefix + "b HELD");
    CliRun one = cli("list", "--prefix", prefix, "--limit", "1");
    assertThat(one.code()).as(one.toString()).isZero();
    assertThat(one.out().lines()).hasSize(1).allMatch(l -> l.contains(prefix + "a  FREE"));
  }

  @Test
  void anUnreachableEndpointFailsFastWithExit3NamingIt() {
    long start = System.nanoTime();
    List<String> all = new ArrayList<>(List.of("inspect", "job", "--timeout", "30000"));
    all.addAll(storeArgs(UNREACHABLE));
    CliRun r = CliRun.run(all.toArray(String[]::new));
    Duration took = Duration.ofNanos(System.nanoTime() - start);

    assertThat(r.code()).as(r.toString()).isEqualTo(ExitCodes.UNAVAILABLE);
    assertThat(r.err()).contains(UNREACHABLE, "did not answer", "--timeout");
    assertThat(r.out()).isEmpty();
    // A refused connection is known at once: far below the 30 s of waiting out the timeout.
    assertThat(took).isLessThan(Duration.ofSeconds(15));
  }
}
