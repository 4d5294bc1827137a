package dev.leases.spring.example;

// quick-start:app
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

@SpringBootApplication
@EnableScheduling
public class InvoiceApp {
  public static void main(String[] args) {
    SpringApplication.run(InvoiceApp.class, args);
  }
}
// quick-start:end
