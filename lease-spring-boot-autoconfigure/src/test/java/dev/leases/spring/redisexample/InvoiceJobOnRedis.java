package dev.leases.spring.redisexample;

import dev.leases.once.RunContext;
import dev.leases.spring.LeaseContext;
import dev.leases.spring.RunOnce;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * {@code InvoiceJob} on Redis: each run's work is one {@code HINCRBY} of field {@code <run>} in
 * hash {@code ${invoices.key}}, so a run whose work happened twice shows a 2. Not transactional
 * with the ledger's completion (Redis has no such transaction): a JVM that dies between the two
 * leaves a 1 without a completion, and the next firing of that run would make it 2.
 */
@Component
public class InvoiceJobOnRedis {

  private final StringRedisTemplate redis;
  private final String key;

  public InvoiceJobOnRedis(StringRedisTemplate redis,
      @Value("${invoices.key:invoices}") String key) {
    this.redis = redis;
    this.key = key;
  }

  @Scheduled(cron = "${invoices.cron:0 0 2 * * *}")
  @RunOnce(job = "invoices")
  public void sendInvoices() {
    RunContext run = LeaseContext.currentRun().orElseThrow();
    redis.opsForHash().increment(key, run.run(), 1);
  }
}
