package dev.leases.etcd;

import dev.leases.HolderId;
import java.util.List;
import java.util.Objects;

/**
 * The changes of one lease that etcd still keeps, newest first, as {@link EtcdLeaseStore#history}
 * read them: a snapshot at etcd revision {@link #revision()}.
 *
 * <p>{@link #changes()} is every change of the lease key at or below {@code revision}, newest
 * first, unless the walk stopped early: at the limit ({@link #truncated()}: earlier changes exist
 * and were not read), or at etcd's compaction ({@link #compactRevision()} above 0: etcd has
 * discarded the revisions below it, so earlier changes are gone for good). A change after
 * {@code revision} — a grant racing with the read — is not in it; {@code inspect} afterwards may
 * show a newer state.
 *
 * @param name the lease name
 * @param revision the etcd revision the history was read at: complete up to it
 * @param changes newest first; immutable
 * @param compactRevision etcd's compact revision, if the walk reached it (no change before it
 *     can be read any more), else 0
 * @param truncated whether the walk stopped at the limit with earlier changes left unread
 */
public record EtcdLeaseHistory(String name, long revision, List<Change> changes,
    long compactRevision, boolean truncated) {

  /** Copies {@code changes}. */
  public EtcdLeaseHistory {
    Objects.requireNonNull(name, "name");
    changes = List.copyOf(changes);
  }

  /** What one change of the lease key was. */
  public enum Kind {
    /** The key was created: a new tenure began; its token is this change's revision. */
    GRANTED,
    /**
     * The key was written again within its tenure, same token: a renewal asking a longer TTL than
     * its etcd lease had moved the key onto a longer etcd lease (or someone wrote the key by hand).
     * Ordinary renewals only keep the etcd lease alive and write nothing, so they leave no change.
     */
    REWRITTEN,
    /** The holder released the lease: the key was deleted, the release recorded with its token. */
    RELEASED,
    /**
     * The key was deleted without a release: its etcd lease expired or was revoked, or someone
     * deleted the key by hand (etcd records no difference).
     */
    EXPIRED
  }

  /**
   * One change of the lease key.
   *
   * @param revision the etcd revision of the change
   * @param kind what happened
   * @param holder the holder of the tenure it belongs to
   * @param token the tenure's fencing token (the key's {@code create_revision})
   * @param etcdLeaseId the etcd lease the key was attached to (for a deletion: the one it was on
   *     until then), or 0 if that can no longer be read (the revision before a deletion was
   *     compacted)
   */
  public record Change(long revision, Kind kind, HolderId holder, long token, long etcdLeaseId) {

    /** Checks that nothing is null. */
    public Change {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(holder, "holder");
    }
  }
}
