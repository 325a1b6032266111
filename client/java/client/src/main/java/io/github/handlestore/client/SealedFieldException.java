package io.github.handlestore.client;

/**
 * A sealed client-state field holds a value this namespace's key ring does not open: sealed by
 * another cluster's or namespace's ring, for another client key or field, or with a key since
 * retired. The value is refused, never used; clearing the field (and signing in again) is the way
 * on. Thrown by {@link ClientStateStore#openSealed}.
 */
public class SealedFieldException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final String key;

  /** The field at state-tool key {@code key} was refused, for {@code why}. */
  public SealedFieldException(String key, String why) {
    super(
        "handlestore: client state: "
            + key
            + " is refused: "
            + why
            + "; clear it and sign in again");
    this.key = key;
  }

  /** The state-tool key of the refused field ({@code mcp-clients/<client key>/<field>}). */
  public String key() {
    return key;
  }
}
