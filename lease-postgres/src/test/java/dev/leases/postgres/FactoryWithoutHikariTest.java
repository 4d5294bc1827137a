package dev.leases.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * HikariCP is an optional dependency of lease-postgres, needed only by the factory (which builds
 * its own pool). A user who opens the factory without it gets an error saying what to add, not a
 * {@link NoClassDefFoundError} from deep inside.
 */
class FactoryWithoutHikariTest {

  @Test
  void theFactoryWithoutHikariOnTheClassPathSaysToAddIt() throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!entry.contains("HikariCP") && !entry.contains("com/zaxxer")) {
        urls.add(new File(entry).toURI().toURL());
      }
    }
    try (URLClassLoader noHikari = new URLClassLoader(urls.toArray(URL[]::new),
        ClassLoader.getPlatformClassLoader())) {
      assertThat(catchThrowable(() -> noHikari.loadClass("com.zaxxer.hikari.HikariConfig")))
          .as("the loader must not see HikariCP").isInstanceOf(ClassNotFoundException.class);
      Class<?> factory = noHikari.loadClass(PostgresLeaseStoreFactory.class.getName());
      Object f = factory.getConstructor().newInstance();
      Throwable thrown = catchThrowable(() -> factory.getMethod("open", Map.class).invoke(f,
          Map.of(PostgresLeaseStoreFactory.JDBC_URL, "jdbc:postgresql://127.0.0.1:1/x")));
      Throwable cause = thrown instanceof java.lang.reflect.InvocationTargetException ite
          ? ite.getCause() : thrown;
      assertThat(cause).as("what open() throws without HikariCP")
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("com.zaxxer:HikariCP");
    }
  }
}
