package dev.leases.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseStore;
import dev.leases.etcd.EtcdLeaseHistory;
import dev.leases.etcd.EtcdLeaseStore;
import dev.leases.etcd.EtcdServers;
import dev.leases.tck.servers.TestServer;
import dev.leases.tck.servers.TestServers;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The CLI against a real local etcd ({@code EtcdServers}), under a key prefix of its own. */
class EtcdCliTest extends KeyValueCliTest {

  @Override
  LeaseStore open(String keyPrefix) {
    return EtcdLeaseStore.builder(EtcdServers.endpointList().toArray(String[]::new))
        .keyPrefix(keyPrefix).build();
  }

  @Override
  String endpoint() {
    return EtcdServers.endpoints();
  }

  @Override
  List<String> storeArgs(String endpoint) {
    return List.of("--store", "etcd", "--endpoints", endpoint);
  }

  /**
   * Granted to A, released, granted to B: {@code history --json} prints the three changes newest
   * first with revisions, holders, tokens and etcd leases (hex, as etcdctl shows them) as the
   * store reads them; the text form is a table in the same order; {@code --limit} keeps the newest
   * and says earlier ones exist.
   */
  @Test
  void historyPrintsTheChangesNewestFirstAsJsonAndAsATable() {
    String n = name();
    HolderId a = HolderId.generate();
    HolderId b = HolderId.generate();
    LeaseGrant ga = store().acquireOrRenew(n, a, Duration.ofMinutes(1)).orElseThrow();
    assertThat(store().release(n, a)).isTrue();
    LeaseGrant gb = store().acquireOrRenew(n, b, Duration.ofMinutes(1)).orElseThrow();
    List<EtcdLeaseHistory.Change> expected =
        ((EtcdLeaseStore) store()).history(n, 10).changes();
    assertThat(expected).extracting(EtcdLeaseHistory.Change::kind).containsExactly(
        EtcdLeaseHistory.Kind.GRANTED, EtcdLeaseHistory.Kind.RELEASED,
        EtcdLeaseHistory.Kind.GRANTED);

    CliRun r = cli("history", n, "--json");

    assertThat(r.code()).as(r.toString()).isZero();
    JsonNode j = r.json();
    assertThat(j.get("name").asText()).isEqualTo(n);
    assertThat(j.get("revision").asLong()).isGreaterThanOrEqualTo(gb.token());
    assertThat(j.get("compactRevision").asLong()).isZero();
    assertThat(j.get("truncated").asBoolean()).isFalse();
    List<String> printed = new ArrayList<>();
    j.get("changes").forEach(c -> printed.add(c.get("revision").asLong() + " "
        + c.get("change").asText() + " " + c.get("holder").asText() + " "
        + c.get("token").asLong() + " " + c.get("etcdLeaseId").asText()));
    assertThat(printed).containsExactlyElementsOf(expected.stream().map(c -> c.revision() + " "
        + c.kind() + " " + c.holder().value() + " " + c.token() + " "
        + Long.toHexString(c.etcdLeaseId())).toList());
    assertThat(expected.get(0).token()).isEqualTo(gb.token());
    assertThat(expected.get(2).token()).isEqualTo(ga.token());

    CliRun text = cli("history", n);
    assertThat(text.code()).as(text.toString()).isZero();
    List<String> lines = text.out().lines().toList();
    assertThat(lines).as(text.toString()).hasSize(6);
    assertThat(lines.get(0)).contains("history of " + n, "etcd revision", "newest first");
    assertThat(lines.get(1)).contains("REVISION", "CHANGE", "TOKEN", "ETCD LEASE", "HOLDER");
    for (int i = 0; i < expected.size(); i++) {
      EtcdLeaseHistory.Change c = expected.get(i);
      assertThat(lines.get(2 + i).split(" +")).as(lines.get(2 + i)).containsExactly(
          Long.toString(c.revision()), c.kind().name(), Long.toString(c.token()),
          Long.toHexString(c.etcdLeaseId()), c.holder().value());
    }
    assertThat(lines.get(5)).contains("complete");

    CliRun one = cli("history", n, "--limit", "1", "--json");
    assertThat(one.code()).as(one.toString()).isZero();
    assertThat(one.json().get("changes")).hasSize(1);
    assertThat(one.json().get("changes").get(0).get("holder").asText()).isEqualTo(b.value());
    assertThat(one.json().get("truncated").asBoolean()).isTrue();
    assertThat(cli("history", n, "--limit", "1").out()).contains("earlier ones exist",
        "raise --limit");
  }

  /**
   * After etcd compacted the revisions below B's grant, {@code history} prints what is left and
   * says where compaction ended it (on a server of its own: compaction takes every test's history).
   */
  @Test
  void historySaysWhereEtcdsCompactionEndedIt() throws Exception {
    String n = name();
    HolderId a = HolderId.generate();
    try (TestServer own = TestServers.of(EtcdServers.spec());
        Client admin = Client.builder().endpoints(own.endpoint()).build();
        EtcdLeaseStore s = EtcdLeaseStore.builder(own.endpoint()).build()) {
      s.acquireOrRenew(n, a, Duration.ofMinutes(1)).orElseThrow();
      assertThat(s.release(n, a)).isTrue();
      LeaseGrant gb = s.acquireOrRenew(n, HolderId.generate(), Duration.ofMinutes(1)).orElseThrow();
      admin.getKVClient().compact(gb.token()).get(10, TimeUnit.SECONDS);
      List<String> args = List.of("history", n, "--store", "etcd", "--endpoints", own.endpoint());

      CliRun j = CliRun.run(concat(args, "--json"));
      assertThat(j.code()).as(j.toString()).isZero();
      assertThat(j.json().get("compactRevision").asLong()).isEqualTo(gb.token());
      assertThat(j.json().get("changes")).hasSize(1);
      assertThat(j.json().get("changes").get(0).get("token").asLong()).isEqualTo(gb.token());
      CliRun text = CliRun.run(args.toArray(String[]::new));
      assertThat(text.code()).as(text.toString()).isZero();
      assertThat(text.out()).contains("etcd compacted the revisions below " + gb.token(),
          "earlier changes are gone");
    }
  }

  private static String[] concat(List<String> args, String... more) {
    List<String> all = new ArrayList<>(args);
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  @Test
  void historyOfANameNeverGrantedIsEmptyAndBadArgumentsAreUsageErrors() {
    CliRun none = cli("history", name());
    assertThat(none.code()).as(none.toString()).isZero();
    assertThat(none.out()).contains("no change of", "on record");
    assertThat(cli("history", name(), "--json").json().get("changes")).isEmpty();

    for (String bad : List.of("0", "-1", "" + (EtcdLeaseStore.MAX_HISTORY + 1))) {
      CliRun r = cli("history", "job", "--limit", bad);
      assertThat(r.code()).as(r.toString()).isEqualTo(ExitCodes.USAGE);
      assertThat(r.err()).contains("--limit: limit must be 1 to " + EtcdLeaseStore.MAX_HISTORY, bad);
    }
    CliRun malformed = cli("history", "x\u0001y");
    assertThat(malformed.code()).as(malformed.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(malformed.err()).contains("NAME", "control characters");
  }
}
