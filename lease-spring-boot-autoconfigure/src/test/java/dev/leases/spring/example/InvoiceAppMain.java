package dev.leases.spring.example;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@link InvoiceApp} as a child JVM for the two-JVM test: prints {@code READY}, runs until
 * {@code stop} arrives on stdin, then prints {@code RUNS <outcome> <count>} per outcome of the
 * {@code leases.runs} timer and {@code CLOSED}.
 */
public final class InvoiceAppMain {

  private InvoiceAppMain() {}

  public static void main(String[] args) throws Exception {
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(InvoiceApp.class)
        .web(WebApplicationType.NONE).run(args);
    System.out.println("READY");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null && !line.equals("stop")) {
      // wait
    }
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    for (Timer t : registry.find("leases.runs").timers()) {
      System.out.println("RUNS " + t.getId().getTag("outcome") + " " + t.count());
    }
    ctx.close();
    System.out.println("CLOSED");
    System.exit(0);
  }
}
