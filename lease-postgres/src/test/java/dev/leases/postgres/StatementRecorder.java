package dev.leases.postgres;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.function.Consumer;
import javax.sql.DataSource;

/** A data source whose connections report the SQL of every statement prepared or created. */
final class StatementRecorder {

  private StatementRecorder() {}

  /**
   * {@code target}, reporting to {@code onStatement} the SQL of each {@code prepareStatement}
   * (null for {@code createStatement}).
   */
  static DataSource recording(DataSource target, Consumer<String> onStatement) {
    return (DataSource) Proxy.newProxyInstance(StatementRecorder.class.getClassLoader(),
        new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
          Object result = invoke(target, method, args);
          return method.getName().equals("getConnection")
              ? recording((Connection) result, onStatement) : result;
        });
  }

  private static Connection recording(Connection c, Consumer<String> onStatement) {
    return (Connection) Proxy.newProxyInstance(StatementRecorder.class.getClassLoader(),
        new Class<?>[] {Connection.class}, (proxy, method, args) -> {
          if (method.getName().equals("prepareStatement")) {
            onStatement.accept((String) args[0]);
          } else if (method.getName().equals("createStatement")) {
            onStatement.accept(null);
          }
          return invoke(c, method, args);
        });
  }

  private static Object invoke(Object target, Method m, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
