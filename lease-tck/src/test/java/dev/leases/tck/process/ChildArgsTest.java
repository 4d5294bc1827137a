package dev.leases.tck.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leases.tck.remote.RemoteLeaseStoreFactory;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ChildArgsTest {

  @Test
  void whatTheParentFormatsTheChildParsesBack() {
    StoreRecipe recipe = new StoreRecipe(RemoteLeaseStoreFactory.class,
        Map.of("jdbcUrl", "jdbc:postgresql://h/db?user=a&password=b=c", "port", "7"));
    List<String> args = ChildArgs.format(recipe, Map.of("name", "lease with spaces", "ttl-ms", "1500"));
    ChildArgs parsed = ChildArgs.parse(args.toArray(String[]::new));
    assertThat(parsed.recipe()).isEqualTo(recipe);
    assertThat(parsed.require("name")).isEqualTo("lease with spaces");
    assertThat(parsed.requireLong("ttl-ms")).isEqualTo(1500);
    assertThat(parsed.longOr("renew-ms", 9)).isEqualTo(9);
  }

  @Test
  void missingOrMalformedArgumentsSayWhatIsExpected() {
    assertThatThrownBy(() -> ChildArgs.parse(new String[] {"--name=x"}))
        .hasMessageContaining("--factory=CLASS is required");
    assertThatThrownBy(() -> ChildArgs.parse(new String[] {"name"}))
        .hasMessageContaining("expected --KEY=VALUE");
    assertThatThrownBy(() -> ChildArgs.parse(new String[] {"--factory=java.lang.String"}))
        .hasMessageContaining("is not a LeaseStoreFactory");
    ChildArgs parsed = ChildArgs.parse(new String[] {
        "--factory=" + RemoteLeaseStoreFactory.class.getName()});
    assertThatThrownBy(() -> parsed.require("name")).hasMessageContaining("--name=... is required");
    assertThatThrownBy(() -> ChildArgs.format(parsed.recipe(), Map.of("setting", "x")))
        .hasMessageContaining("reserved");
  }
}
