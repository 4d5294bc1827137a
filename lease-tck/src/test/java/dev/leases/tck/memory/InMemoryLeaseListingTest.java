package dev.leases.tck.memory;

import dev.leases.LeaseStore;
import dev.leases.memory.InMemoryLeaseStore;
import dev.leases.tck.LeaseListingTck;

/** The listing kit on the reference store: clients of one shared in-memory store. */
class InMemoryLeaseListingTest extends LeaseListingTck {

  private final InMemoryLeaseStore shared = new InMemoryLeaseStore();

  @Override
  protected LeaseStore newStore() {
    return shared.newClient();
  }
}
