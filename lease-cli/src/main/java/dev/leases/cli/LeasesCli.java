package dev.leases.cli;

import dev.leases.LeaseException;
import java.io.PrintWriter;
import java.util.Map;
import java.util.Objects;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code leases} command: an operator's view of a lease store. Runs in-process through
 * {@link #execute}; {@link Main} is the executable jar's entry point.
 */
@Command(name = "leases", mixinStandardHelpOptions = true,
    versionProvider = LeasesCli.Version.class,
    description = {"Inspect, list, watch and force-release leases in a lease store;",
        "on etcd, also read a lease's history."},
    subcommands = {InspectCommand.class, ListCommand.class, WatchCommand.class,
        TokenCommand.class, HistoryCommand.class, ReleaseCommand.class,
        CommandLine.HelpCommand.class},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:done",
        "1:not found or refused (no token known, nothing held, release lost a race, cannot list)",
        "2:usage (bad option, unknown store, malformed lease name, history not on etcd)",
        "3:store unavailable (did not answer within --timeout, or answered with an error)"},
    footerHeading = "%nSecrets:%n",
    footer = "The password (postgres, redis) or ACL token (consul) is read from --password-file or"
        + " $" + Secrets.ENV_VAR + ", never from the command line, and never printed.")
public final class LeasesCli implements Runnable {

  private final PrintWriter out;
  private final PrintWriter err;
  private final Map<String, String> env;

  @Spec
  CommandSpec spec;

  private LeasesCli(PrintWriter out, PrintWriter err, Map<String, String> env) {
    this.out = out;
    this.err = err;
    this.env = env;
  }

  /**
   * Runs one command line and returns its exit code ({@link ExitCodes}); results go to {@code out},
   * messages to {@code err}, and secrets are read from {@code env} (for example
   * {@code System.getenv()}).
   */
  public static int execute(PrintWriter out, PrintWriter err, Map<String, String> env,
      String... args) {
    LeasesCli cli = new LeasesCli(Objects.requireNonNull(out, "out"),
        Objects.requireNonNull(err, "err"), Map.copyOf(env));
    CommandLine line = new CommandLine(cli)
        .setOut(out)
        .setErr(err)
        .setCaseInsensitiveEnumValuesAllowed(true)
        .setExecutionExceptionHandler((e, cmd, parsed) -> cli.failed(e));
    int code = line.execute(args);
    out.flush();
    err.flush();
    return code;
  }

  private int failed(Exception e) {
    int code;
    String message;
    if (e instanceof CliException c) {
      code = c.exitCode();
      message = c.getMessage();
    } else if (e instanceof LeaseException) {
      code = ExitCodes.UNAVAILABLE;
      message = "the store failed: " + e.getMessage();
    } else if (e instanceof IllegalArgumentException) {
      code = ExitCodes.USAGE;
      message = e.getMessage();
    } else {
      code = ExitCodes.REFUSED;
      message = "unexpected error (please report it): " + e;
    }
    err.println("leases: " + message);
    err.flush();
    return code;
  }

  /** With no command: the usage, and exit 2. */
  @Override
  public void run() {
    spec.commandLine().usage(err);
    throw new CommandLine.ParameterException(spec.commandLine(), "name a command");
  }

  PrintWriter out() {
    return out;
  }

  PrintWriter err() {
    return err;
  }

  Map<String, String> env() {
    return env;
  }

  /** The version from the jar's manifest, when there is one. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = LeasesCli.class.getPackage().getImplementationVersion();
      return new String[] {"leases " + (v == null ? "(development build)" : v)};
    }
  }
}
