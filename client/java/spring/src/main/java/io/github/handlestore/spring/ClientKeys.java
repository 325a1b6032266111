package io.github.handlestore.spring;

import java.nio.charset.StandardCharsets;

/**
 * How a Spring authorized client (a registration and a principal) is named in the cluster's client
 * state: its client key, under which the MCP client of the same user keeps its session and server
 * metadata too. Any function of the two giving 1 to 128 bytes without '/' or control characters
 * will do; {@link #DEFAULT} is {@code <registration id>|<principal name>}, escaped.
 */
@FunctionalInterface
public interface ClientKeys {
  /** The client key of {@code principalName}'s client for {@code registrationId}. */
  String clientKey(String registrationId, String principalName);

  /**
   * {@code <registration id>|<principal name>}, each with '%', '|', '/' and control characters
   * written as {@code %XX} (so that no two pairs share a key); over 128 bytes is refused with
   * {@link IllegalArgumentException} (give a function of your own for such names).
   */
  ClientKeys DEFAULT =
      (registrationId, principalName) -> {
        String key = escape(registrationId) + "|" + escape(principalName);
        if (key.getBytes(StandardCharsets.UTF_8).length > 128) {
          throw new IllegalArgumentException(
              "the client key of registration '"
                  + registrationId
                  + "' and its principal is over 128 bytes: give the service ClientKeys of your own");
        }
        return key;
      };

  private static String escape(String part) {
    StringBuilder out = new StringBuilder(part.length());
    part.codePoints()
        .forEach(
            cp -> {
              if (cp == '%'
                  || cp == '|'
                  || cp == '/'
                  || Character.getType(cp) == Character.CONTROL) {
                for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
                  out.append(String.format("%%%02X", b & 0xff));
                }
              } else {
                out.appendCodePoint(cp);
              }
            });
    return out.toString();
  }
}
