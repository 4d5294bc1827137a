package dev.leases.spring.autoconfigure;

import dev.leases.postgres.PostgresServers;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Real Spring Boot contexts on the shared embedded PostgreSQL, each with its own tables. */
final class PostgresContexts {

  private PostgresContexts() {}

  static String fresh(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  /** Properties that give a context its own lease, fence and run tables on {@code url}. */
  static List<String> tables(String url, String suffix) {
    return List.of(
        "spring.datasource.url=" + url,
        "spring.datasource.hikari.maximum-pool-size=4",
        "spring.datasource.hikari.connection-timeout=1000",
        "leases.postgres.table=l_" + suffix,
        "leases.postgres.fence-table=f_" + suffix,
        "leases.postgres.run-table=r_" + suffix);
  }

  static ConfigurableApplicationContext start(Class<?> app, List<String> properties) {
    List<String> all = new ArrayList<>(properties);
    all.add("spring.main.banner-mode=off");
    return new SpringApplicationBuilder(app).web(WebApplicationType.NONE)
        .properties(all.toArray(String[]::new)).run();
  }

  static String url() {
    return PostgresServers.url();
  }
}
