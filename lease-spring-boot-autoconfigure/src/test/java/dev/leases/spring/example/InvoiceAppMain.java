package dev.leases.spring.example;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * An example application as a child JVM for the two-JVM tests ({@link AppJvms}): {@code args[0]}
 * names its class (e.g. {@link InvoiceApp}), the rest are Spring arguments. Prints {@code READY},
 * runs until {@code stop} arrives on stdin, stops the context (the scheduler waits for a running
 * job, so every run that ends is counted), then prints {@code RUNS <outcome> <count>} per outcome
 * of the {@code leases.runs} timer and {@code CLOSED}.
 */
public final class InvoiceAppMain {

  private InvoiceAppMain() {}

  public static void main(String[] args) throws Exception {
    Class<?> app = Class.forName(args[0]);
    ConfigurableApplicationContext ctx = new SpringApplicationBuilder(app)
        .web(WebApplicationType.NONE).run(Arrays.copyOfRange(args, 1, args.length));
    System.out.println("READY");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null && !line.equals("stop")) {
      // wait
    }
    ctx.stop();
    MeterRegistry registry = ctx.getBean(MeterRegistry.class);
    for (Timer t : registry.find("leases.runs").timers()) {
      System.out.println("RUNS " + t.getId().getTag("outcome") + " " + t.count());
    }
    ctx.close();
    System.out.println("CLOSED");
    System.exit(0);
  }
}
