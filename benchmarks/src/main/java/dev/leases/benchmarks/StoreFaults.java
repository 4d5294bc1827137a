package dev.leases.benchmarks;

/** The store faults the nemesis can inject per backend (none yet for the in-memory store). */
final class StoreFaults {

  private StoreFaults() {}

  /** The backend's store fault, or null if there is none. */
  static NemesisRun.StoreFault of(Backend backend) {
    return null;
  }
}
