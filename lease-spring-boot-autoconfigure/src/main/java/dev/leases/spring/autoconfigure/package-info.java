/**
 * Spring Boot auto-configuration: a {@link dev.leases.LeaseStore} for the backend on the class path
 * (settings under {@code leases.*}, {@link dev.leases.spring.autoconfigure.LeasesProperties}), leader
 * loops started with the context, metrics when Micrometer is present and a health indicator.
 */
@NullMarked
package dev.leases.spring.autoconfigure;

import org.jspecify.annotations.NullMarked;
