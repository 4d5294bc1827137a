package dev.leases.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import picocli.CommandLine.Command;

/** {@code leases token NAME}: the fencing token that bounds every token issued for the name. */
@Command(name = "token", description = {
    "Print a token t that fences everything issued so far for NAME: every token issued is <= t",
    "and every later grant of a new tenure gets one > t. Exit 1 if the store knows no token."})
final class TokenCommand extends NamedCommand {

  @Override
  int run(StoreOptions.Opened store, Output output) {
    String n = name();
    OptionalLong token = store.store().token(n);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("name", n);
    f.put("token", token.isPresent() ? token.getAsLong() : null);
    output.print(f, token.isPresent() ? Long.toString(token.getAsLong())
        : "no token known for " + n + " (treat as 0)");
    return token.isPresent() ? ExitCodes.OK : ExitCodes.REFUSED;
  }
}
