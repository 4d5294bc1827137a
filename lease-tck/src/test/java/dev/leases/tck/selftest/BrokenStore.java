package dev.leases.tck.selftest;

import dev.leases.HolderId;
import dev.leases.LeaseGrant;
import dev.leases.LeaseState;
import dev.leases.LeaseStore;
import dev.leases.LeaseStoreClosedException;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.spi.ForwardingLeaseStore;
import dev.leases.tck.selftest.BrokenMemoryStore.Bug;
import dev.leases.tck.remote.RemoteLeaseStore;
import dev.leases.time.LeaseClock;
import java.text.Normalizer;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The catalogue of deliberately broken stores the kit must catch, each with the scenarios expected
 * to catch it. {@link #REFERENCE} is the unbroken reference store served the same way: it must pass
 * every scenario any broken store is checked with, so that a scenario failing for unrelated reasons
 * is never counted as a catch.
 */
enum BrokenStore {

  REFERENCE("the unbroken reference store", List.of(),
      () -> new Decorated(UnaryOperator.identity())),

  TOKEN_REUSED_AFTER_EXPIRY("a new tenure after an expiry reuses the expired tenure's token",
      List.of("afterExpiryAnotherHolderGetsLargerToken", "reacquireAfterOwnExpiryGivesLargerToken"),
      copy(Bug.TOKEN_REUSED_AFTER_EXPIRY)),

  OWN_REACQUIRE_AFTER_EXPIRY_KEEPS_TOKEN("the holder's re-acquire after its own expiry keeps the token",
      List.of("reacquireAfterOwnExpiryGivesLargerToken"),
      copy(Bug.OWN_REACQUIRE_AFTER_EXPIRY_KEEPS_TOKEN)),

  TOKEN_RESET_ON_RELEASE("per-name tokens; release deletes the record, so tokens restart at 1",
      List.of("releaseThenReacquireBySameHolderGivesLargerToken",
          "releaseLetsAnotherAcquireAtOnceWithLargerToken", "tokenReportsTheHighestIssued"),
      copy(Bug.PER_NAME_TOKENS, Bug.RELEASE_DELETES_RECORD)),

  TOKEN_RESET_AFTER_OUT_OF_BAND_DELETE("per-name tokens restart at 1 after an out-of-band delete",
      List.of("tokenNeverGoesBackwardsAfterOutOfBandDelete",
          "tokenAfterAnOutOfBandDeleteNeverAnswersBelowWhatWasIssued"),
      copy(Bug.PER_NAME_TOKENS)),

  TOKEN_BOUND_FORGOTTEN_AFTER_DELETE("global counter, but token()/inspect answer 0 once the record"
      + " is deleted", List.of("tokenAfterAnOutOfBandDeleteNeverAnswersBelowWhatWasIssued"),
      copy(Bug.NO_BOUND_WITHOUT_RECORD)),

  TOKEN_NOT_POSITIVE("per-name tokens start at 0 (LeaseGrant refuses to carry it: acquire throws)",
      List.of("freshAcquireGivesPositiveTokenAndFutureExpiry"),
      copy(Bug.PER_NAME_TOKENS, Bug.TOKENS_START_AT_ZERO)),

  TOKEN_IS_THE_FIRST_ISSUED("token(name) answers the first token ever issued for the name",
      List.of("tokenReportsTheHighestIssued"), () -> {
        Map<String, Long> first = new ConcurrentHashMap<>();
        return new Decorated(c -> new ForwardingLeaseStore(c) {
          @Override
          public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
            Optional<LeaseGrant> g = super.acquireOrRenew(name, holder, ttl);
            g.ifPresent(x -> first.putIfAbsent(name, x.token()));
            return g;
          }

          @Override
          public OptionalLong token(String name) {
            OptionalLong t = super.token(name);
            Long f = first.get(name);
            return f == null ? t : OptionalLong.of(f);
          }
        });
      }),

  TOKEN_EMPTY_WHILE_FREE("token(name) is empty while the lease is free (after a release)",
      List.of("tokenReportsTheHighestIssued"),
      () -> new Decorated(c -> new ForwardingLeaseStore(c) {
        @Override
        public OptionalLong token(String name) {
          return inspect(name).status() == LeaseState.Status.FREE ? OptionalLong.empty()
              : super.token(name);
        }
      })),

  FREE_STATE_FORGETS_TOKEN("a released lease is reported FREE with last token 0",
      List.of("releaseLetsAnotherAcquireAtOnceWithLargerToken", "inspectTellsFreeHeldAndExpiredApart"),
      copy(Bug.FREE_FORGETS_TOKEN)),

  RENEWAL_RETURNS_A_DIFFERENT_TOKEN("a renewal extends the lease but returns token + 1",
      List.of("renewalBySameHolderKeepsTokenAndExtendsExpiry",
          "contenderGetsNothingWhileHeldAndChangesNothing"),
      () -> new Decorated(c -> new ForwardingLeaseStore(c) {
        @Override
        public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
          boolean renewal = inspect(name) instanceof LeaseState.Held h && h.holder().equals(holder);
          return super.acquireOrRenew(name, holder, ttl).map(g -> !renewal ? g
              : new LeaseGrant(g.name(), g.holder(), g.token() + 1, g.expiresAt(), g.ttl()));
        }
      })),

  SUPERSEDED_HOLDER_RENEWAL_SUCCEEDS("a superseded holder's renewal succeeds with its old token"
      + " (etcd: a deleted key's lease still keeps alive)",
      List.of("supersededHolderRenewalReturnsEmptyAndLeavesNewHolderIntact",
          "renewalAfterAnOutOfBandDeleteAndAnotherHoldersGrantReturnsEmpty"),
      copy(Bug.SUPERSEDED_RENEWAL_SUCCEEDS)),

  CONTENDER_STEALS_UNEXPIRED_LEASE("a contender is granted a lease another holds unexpired",
      List.of("contenderGetsNothingWhileHeldAndChangesNothing", "releaseByNonHolderDoesNothing"),
      copy(Bug.CONTENDER_STEALS)),

  NON_ATOMIC_ACQUIRE("acquire reads, then writes in a second step (check-then-act race)",
      List.of("sixteenThreadsRacingForAFreeLeaseGetExactlyOneGrantPerRound"),
      copy(Bug.NON_ATOMIC_ACQUIRE)),

  EXPIRY_NEVER_ENFORCED("acquire ignores expiry: a lease is held until released",
      List.of("reacquireAfterOwnExpiryGivesLargerToken",
          "releaseAfterTheHoldersOwnExpiryReportsFalseAndChangesNothing"),
      copy(Bug.EXPIRY_NOT_ENFORCED)),

  EXPIRES_AT_80_PERCENT_OF_TTL("frees the lease at 80% of the TTL while grant and inspect report"
      + " the full TTL", List.of("contenderIsRefusedUntilTheGrantedTtlHasPassedSinceTheHolderSentItsRequest"),
      copy(Bug.EXPIRES_AT_80_PERCENT)),

  GRANT_REPORTS_LONGER_TTL("the grant reports 125% of the TTL the store enforces",
      List.of("contenderIsRefusedUntilTheGrantedTtlHasPassedSinceTheHolderSentItsRequest"),
      copy(Bug.GRANT_REPORTS_LONGER_TTL)),

  FIXED_TTL_IGNORES_REQUEST("ignores the requested TTL and grants a fixed 30 s",
      List.of("clientClockSkewedByAnHourChangesNoOutcome"), copy(Bug.FIXED_30S_TTL)),

  EXPIRED_REPORTED_AS_FREE("an expired lease is reported FREE, not EXPIRED",
      List.of("inspectTellsFreeHeldAndExpiredApart"), copy(Bug.EXPIRED_REPORTED_AS_FREE)),

  INSPECT_FROM_PER_CLIENT_CACHE("inspect answers from a per-client cache, refreshed only by the"
      + " client's own writes", List.of("inspectNeverAnswersFromACache"),
      () -> new Decorated(c -> new ForwardingLeaseStore(c) {
        private final Map<String, LeaseState> cache = new ConcurrentHashMap<>();

        @Override
        public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
          cache.remove(name);
          return super.acquireOrRenew(name, holder, ttl);
        }

        @Override
        public boolean release(String name, HolderId holder) {
          cache.remove(name);
          return super.release(name, holder);
        }

        @Override
        public LeaseState inspect(String name) {
          return cache.computeIfAbsent(name, super::inspect);
        }
      })),

  RELEASE_BY_NON_HOLDER_SUCCEEDS("release does not check the holder",
      List.of("releaseByNonHolderDoesNothing"), copy(Bug.RELEASE_IGNORES_HOLDER)),

  RELEASE_AFTER_OWN_EXPIRY_REPORTS_TRUE("release does not check expiry: a late release answers true",
      List.of("releaseAfterTheHoldersOwnExpiryReportsFalseAndChangesNothing"),
      copy(Bug.RELEASE_IGNORES_EXPIRY)),

  RELEASE_HINTS_NEVER_DELIVERED("declares release hints but never delivers one",
      List.of("releaseAndDeleteHintsReachAnotherClientsSubscriber",
          "followerTakesOverWithinOneSecondAfterCleanClose", "releaseFromAnotherJvmWakesAFollowerHere"),
      copy(Bug.NO_HINTS)),

  NO_HINT_AFTER_OUT_OF_BAND_DELETE("hints on release, none when the record is deleted out of band",
      List.of("releaseAndDeleteHintsReachAnotherClientsSubscriber"), copy(Bug.NO_HINT_ON_DELETE)),

  CALLS_AFTER_CLOSE_ACCEPTED("close() does nothing; later calls succeed",
      List.of("closedStoreFailsLaterCallsAndLeavesNoNonDaemonThreads"),
      () -> new Decorated(c -> new ForwardingLeaseStore(c) {
        @Override
        public void close() {}
      })),

  CLOSE_CLOSES_EVERY_CLIENT("closing one client closes every client of the store",
      List.of("closedStoreFailsLaterCallsAndLeavesNoNonDaemonThreads"), () -> {
        AtomicBoolean closed = new AtomicBoolean();
        return new Decorated(c -> new ForwardingLeaseStore(c) {
          private void check() {
            if (closed.get()) {
              throw new LeaseStoreClosedException("the store is closed");
            }
          }

          @Override
          public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
            check();
            return super.acquireOrRenew(name, holder, ttl);
          }

          @Override
          public LeaseState inspect(String name) {
            check();
            return super.inspect(name);
          }

          @Override
          public void close() {
            closed.set(true);
            super.close();
          }
        });
      }),

  CALL_BOUND_IGNORED_WHEN_STALLED("a client that ignores the caller's call bound and waits its own"
      + " 6 s on a stalled connection (5 s stands in for forever: the kit's own timeout is 120 s)",
      List.of("callsStayBoundedWhileTheConnectionToTheStoreIsStalledOrCut"),
      () -> new Decorated(UnaryOperator.identity()) {
        @Override
        public LeaseStore via(int port, Duration callTimeout) {
          return new RemoteLeaseStore(port, Duration.ofSeconds(6));
        }
      }),

  NAMES_TRIMMED("names are trimmed before use", List.of(
      "namesThatDifferOnlyInWhiteSpaceOrTheirLastCharacterAreDistinctLeases"), copy(String::strip)),

  NAMES_TRUNCATED_TO_128("names are truncated to 128 characters", List.of(
      "namesThatDifferOnlyInWhiteSpaceOrTheirLastCharacterAreDistinctLeases"),
      copy(n -> n.length() > 128 ? n.substring(0, 128) : n)),

  NAMES_NFKC_NORMALISED("names are NFKC-normalised (no-break space becomes a space)", List.of(
      "namesThatDifferOnlyInWhiteSpaceOrTheirLastCharacterAreDistinctLeases"),
      copy(n -> Normalizer.normalize(n, Normalizer.Form.NFKC))),

  NAMES_CASE_INSENSITIVE("names compare case-insensitively",
      List.of("unusualNamesAreDataNotSyntax"), copy(n -> n.toLowerCase(Locale.ROOT))),

  NAMES_THROUGH_UTF8_BYTES("validates the key after a UTF-8 round trip, so 'c\\uD800x' is 'c?x'",
      List.of("malformedUtf16NamesAreRefusedAndLoseNothing"),
      () -> new BrokenMemoryStore(EnumSet.of(Bug.VALIDATES_KEY_NOT_NAME), n -> new String(
          n.getBytes(java.nio.charset.StandardCharsets.UTF_8), java.nio.charset.StandardCharsets.UTF_8))),

  BAD_NAMES_ACCEPTED("no name validation: blank, over-long and control characters accepted",
      List.of("ttlOutsideTheDeclaredRangeFailsFastWithTheRangeInTheMessage"),
      copy(Bug.NO_NAME_VALIDATION)),

  TTL_RANGE_LIES("declares 1 ms..1 day but silently clamps any TTL into it",
      List.of("ttlOutsideTheDeclaredRangeFailsFastWithTheRangeInTheMessage"),
      () -> new Decorated(c -> new ForwardingLeaseStore(c) {
        @Override
        public Optional<LeaseGrant> acquireOrRenew(String name, HolderId holder, Duration ttl) {
          Duration min = ttlRange().min();
          Duration max = ttlRange().max();
          Duration t = ttl == null ? null : ttl.compareTo(min) < 0 ? min : ttl.compareTo(max) > 0
              ? max : ttl;
          return super.acquireOrRenew(name, holder, t);
        }
      })),

  EXPIRY_BY_CALLERS_CLOCK("expiry judged by the calling client's wall clock", List.of(
      "storeClientsWithClocksAnHourApartAgreeOnExpiry",
      "clientClockSkewedByAnHourChangesNoOutcome"), copy(Bug.CALLERS_CLOCK)) {
    @Override
    List<String> survivesKit() {
      return List.of("clientClockSkewedByAnHourChangesNoOutcome");
    }
  },

  TOKENS_BACKWARDS_ACROSS_RESTART("a restart loses the token counter (tokens start again at 1)",
      List.of("tokensNeverGoBackwardsAcrossAStoreRestart",
          "tokenNeverGoesBackwardsAfterOutOfBandDelete", "randomHistoryOfThreeHoldersKeepsTokensMonotonic"),
      copy(Bug.RESTART_LOSES_COUNTER)) {
    @Override
    List<String> survivesKit() {
      return List.of("tokenNeverGoesBackwardsAfterOutOfBandDelete",
          "randomHistoryOfThreeHoldersKeepsTokensMonotonic");
    }
  };

  /**
   * What serves one broken store: the backing every client (in this JVM and, through the kit's
   * {@code LeaseStoreServer}, in child JVMs) shares.
   */
  interface Backing {
    /** A new client of the shared leases, with the defect. */
    LeaseStore newClient();

    /** A client whose process clock is {@code clock}; correct stores never read it. */
    default LeaseStore newClient(LeaseClock clock) {
      return newClient();
    }

    /** Deletes the stored lease behind the store's back. */
    void deleteOutOfBand(String name);

    /**
     * Restarts the store as its server would restart; the reference keeps its state in this JVM,
     * so for it a restart changes nothing.
     */
    default void restart() {}

    /** A client reaching the served store through {@code port}, bounded by {@code callTimeout}. */
    default LeaseStore via(int port, Duration callTimeout) {
      return new RemoteLeaseStore(port, callTimeout);
    }
  }

  /** The reference store, each client wrapped by {@code flaw}. */
  static class Decorated implements Backing {
    private final InMemoryLeaseStore reference = new InMemoryLeaseStore();
    private final UnaryOperator<LeaseStore> flaw;

    Decorated(UnaryOperator<LeaseStore> flaw) {
      this.flaw = flaw;
    }

    @Override
    public LeaseStore newClient() {
      return flaw.apply(reference.newClient());
    }

    @Override
    public void deleteOutOfBand(String name) {
      reference.deleteOutOfBand(name);
    }
  }

  private static Supplier<Backing> copy(Bug... bugs) {
    return () -> new BrokenMemoryStore(bugs.length == 0 ? EnumSet.noneOf(Bug.class)
        : EnumSet.of(bugs[0], bugs));
  }

  private static Supplier<Backing> copy(UnaryOperator<String> key) {
    return () -> new BrokenMemoryStore(EnumSet.noneOf(Bug.class), key);
  }

  private final String defect;
  private final List<String> scenarios;
  private final Supplier<Backing> backing;

  BrokenStore(String defect, List<String> scenarios, Supplier<Backing> backing) {
    this.defect = defect;
    this.scenarios = scenarios;
    this.backing = backing;
  }

  String defect() {
    return defect;
  }

  /** The scenarios this store is run with (the ones able to catch it). */
  List<String> scenarios() {
    return scenarios;
  }

  /**
   * Kit scenarios this store is known to pass although it is broken: a gap in the kit, asserted so
   * that the day the kit catches it this list is corrected.
   */
  List<String> survivesKit() {
    return List.of();
  }

  Backing newBacking() {
    return backing.get();
  }
}
