package dev.leases;

/**
 * A fenced resource rejected a write because a higher fencing token has already written to it: the
 * writer was superseded while it was not looking. Nothing was changed. Stop the work; do not log and
 * carry on — carrying on is the double execution the fence exists to prevent.
 */
public class FencedOutException extends LeaseException {

  private final String resource;
  private final long presentedToken;
  private final long highestToken;

  /**
   * @param highestToken the highest token the resource has accepted, or -1 when the resource could
   *     not tell
   */
  public FencedOutException(String resource, long presentedToken, long highestToken) {
    this("write to '" + resource + "' with fencing token " + presentedToken
        + " rejected: the resource has already accepted token "
        + (highestToken < 0 ? "(unknown, higher)" : String.valueOf(highestToken))
        + "; this holder was superseded and must stop", resource, presentedToken, highestToken);
  }

  /** As {@link #FencedOutException(String, long, long)}, with a message that says why. */
  public FencedOutException(String message, String resource, long presentedToken,
      long highestToken) {
    super(message);
    this.resource = resource;
    this.presentedToken = presentedToken;
    this.highestToken = highestToken;
  }

  /** The fenced resource that refused the write. */
  public String resource() {
    return resource;
  }

  /** The token the refused write carried. */
  public long presentedToken() {
    return presentedToken;
  }

  /** The highest token the resource has accepted, or -1 when it could not tell. */
  public long highestToken() {
    return highestToken;
  }
}
