package dev.leases.spring.redisexample;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * The quick start's {@code InvoiceApp} with no database: its leases and run ledger are Redis
 * (Spring Data Redis's connection settings, {@code leases.backend=redis}) and its job,
 * {@link InvoiceJobOnRedis}, writes to Redis. A package of its own, so that {@code InvoiceApp}'s
 * component scan does not pick it up.
 */
@SpringBootApplication(excludeName = // no DataSource: nothing here needs one
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
@EnableScheduling
public class InvoiceAppOnRedis {}
