package dev.leases.examples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leases.FencedOutException;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.leader.LeaderListener;
import dev.leases.leader.LeaseGroup;
import dev.leases.leader.LossReason;
import dev.leases.postgres.JdbcFence;
import dev.leases.postgres.PostgresLeaseStore;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Workers that share P partitions of a topic, each partition a lease ({@code <topic>-partition-0}
 * .. {@code P-1}), all of one worker's leases in ONE {@link LeaseGroup} (one renewal schedule, one
 * batch call a round). Every write to a partition goes through a {@link JdbcFence} with that
 * partition's token, so a worker that lost a partition (crashed, paused, cut off) cannot write to
 * it once the new owner has.
 *
 * <p><b>Balancing rule</b>, run by each worker every renew interval ({@link #balance()}):
 * <ol>
 *   <li><b>Membership.</b> Worker {@code k} (an ordinal below {@code maxWorkers}, like a
 *       StatefulSet's) also holds the lease {@code <topic>-worker-k} in its group. The live workers
 *       are the member leases the store reports HELD. A worker that does not hold its own member
 *       lease takes no partitions.
 *   <li><b>Fair share</b> = ceil(P / live).
 *   <li><b>Give back</b>: a worker that wants more partitions than its share removes the excess
 *       from its group, which releases them at once (others hear the release hint).
 *   <li><b>Take</b>: a worker that wants fewer than its share adds partitions the store reports
 *       free — FREE, or EXPIRED: the orphans of a worker that stopped renewing — trying them from
 *       {@code k x share} on, so that workers do not all reach for the same ones.
 *   <li><b>Lost races</b>: a wanted partition that someone else holds is dropped, to try another.
 * </ol>
 * Shares cover every partition (live x ceil(P/live) &gt;= P). A crashed worker's member lease
 * expires with its partitions (same TTL, renewed in the same batch), the live count drops, the
 * shares grow, and the survivors add the orphans: its partitions move within TTL plus about two
 * renew intervals. Until then nobody writes to them; afterwards the fence rejects its old tokens.
 */
public final class PartitionWorker implements AutoCloseable {

  private final LeaseStore store;
  private final JdbcFence fence;
  private final HikariDataSource pool;
  private final LeaseGroup group;
  private final String topic;
  private final int ordinal;
  private final int partitions;
  private final int maxWorkers;

  PartitionWorker(HikariDataSource pool, String topic, int ordinal, int partitions,
      int maxWorkers, Duration ttl) throws Exception {
    this.pool = pool;
    this.topic = topic;
    this.ordinal = ordinal;
    this.partitions = partitions;
    this.maxWorkers = maxWorkers;
    try (var c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS partition_writes (partition_name text NOT NULL,"
          + " worker int NOT NULL, token bigint NOT NULL, at timestamptz NOT NULL DEFAULT now())");
    }
    this.store = PostgresLeaseStore.builder(pool).build();
    this.fence = JdbcFence.builder(pool).build();
    this.group = LeaseGroup.builder(store).label(topic + "-worker-" + ordinal).ttl(ttl)
        .listener(new LeaderListener() {
          @Override
          public void lost(String name, long token, LossReason reason) {
            System.out.println("LOST " + name + " " + token + " " + reason);
          }
        }).build();
    group.add(member(ordinal));
    group.start();
  }

  String partition(int p) {
    return topic + "-partition-" + p;
  }

  String member(int k) {
    return topic + "-worker-" + k;
  }

  /** One step of the balancing rule in the class comment. */
  void balance() {
    Set<String> wanted = new HashSet<>(group.names());
    wanted.remove(member(ordinal));
    if (group.currentToken(member(ordinal)) == 0) {
      wanted.forEach(group::remove);                          // not a member: own nothing
      return;
    }
    int live = 0;
    for (int k = 0; k < maxWorkers; k++) {
      live += store.inspect(member(k)) instanceof LeaseState.Held ? 1 : 0;
    }
    int share = (partitions + live - 1) / live;
    List<String> free = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      String p = partition((ordinal * share + i) % partitions);  // this worker's preference
      LeaseState state = store.inspect(p);
      boolean mine = state instanceof LeaseState.Held h && h.holder().equals(group.holder());
      if (state instanceof LeaseState.Held && !mine && wanted.remove(p)) {
        group.remove(p);                                      // lost the race for it
      } else if (!(state instanceof LeaseState.Held) && !wanted.contains(p)) {
        free.add(p);
      }
    }
    List<String> heldFirst = new ArrayList<>(wanted);   // so the excess given back is, first,
    heldFirst.sort((a, b) -> Boolean.compare(group.currentToken(b) != 0,  // what is not held yet
        group.currentToken(a) != 0));
    for (int i = share; i < heldFirst.size(); i++) {
      group.remove(heldFirst.get(i));
    }
    for (int i = 0; i < share - wanted.size() && i < free.size(); i++) {
      group.add(free.get(i));
    }
  }

  /** One unit of work on every partition held now, each write fenced with its partition's token. */
  void work() {
    for (String p : group.heldNames()) {
      long token = group.currentToken(p);
      if (p.equals(member(ordinal)) || token == 0) {
        continue;
      }
      try {
        fence.write(p, token, connection -> {
          try (PreparedStatement ps = connection.prepareStatement(
              "INSERT INTO partition_writes (partition_name, worker, token) VALUES (?, ?, ?)")) {
            ps.setString(1, p);
            ps.setInt(2, ordinal);
            ps.setLong(3, token);
            return ps.executeUpdate();
          }
        });
      } catch (FencedOutException e) {
        System.out.println("FENCED " + p + " " + token);     // a newer owner wrote: we lost it
      }
    }
  }

  /** The partitions this worker holds now. */
  Set<String> owned() {
    Set<String> held = new TreeSet<>(group.heldNames());
    held.remove(member(ordinal));
    return held;
  }

  Duration step() {
    return group.renewInterval();
  }

  /** Releases every lease (followers take over at once) and closes the store and pool. */
  @Override
  public void close() {
    group.close();
    store.close();
    pool.close();
  }

  /**
   * {@code <jdbc-url> <ordinal> [topic=orders] [partitions=12] [max-workers=8] [ttl-ms=10000]}:
   * balances and works every renew interval until killed; prints {@code OWNS <ordinal> [...]}
   * whenever its partitions change.
   */
  public static void main(String[] args) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[0]);
    config.setMaximumPoolSize(4);
    int ordinal = Integer.parseInt(args[1]);
    String topic = args.length > 2 ? args[2] : "orders";
    int partitions = args.length > 3 ? Integer.parseInt(args[3]) : 12;
    int maxWorkers = args.length > 4 ? Integer.parseInt(args[4]) : 8;
    Duration ttl = Duration.ofMillis(args.length > 5 ? Long.parseLong(args[5]) : 10_000);
    PartitionWorker worker = new PartitionWorker(new HikariDataSource(config), topic, ordinal,
        partitions, maxWorkers, ttl);
    Runtime.getRuntime().addShutdownHook(new Thread(worker::close, "partition-worker-close"));
    System.out.println("STARTED " + ordinal);
    Set<String> reported = Set.of();
    while (true) {
      worker.balance();
      worker.work();
      Set<String> owned = worker.owned();
      if (!owned.equals(reported)) {
        System.out.println("OWNS " + ordinal + " " + owned);
        reported = owned;
      }
      Thread.sleep(worker.step().toMillis());
    }
  }
}
