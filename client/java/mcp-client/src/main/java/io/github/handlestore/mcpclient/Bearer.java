package io.github.handlestore.mcpclient;

import java.net.http.HttpHeaders;
import java.util.Locale;
import java.util.Optional;

/** The {@code Authorization: Bearer} header (RFC 6750) the customizers write and read back. */
public final class Bearer {
  /** The header's name. */
  public static final String HEADER = "Authorization";

  private static final String SCHEME = "bearer ";

  private Bearer() {}

  /** The header's value for {@code token}. */
  public static String value(String token) {
    return "Bearer " + token;
  }

  /** The bearer token a request carried, if any: for telling its source which one was refused. */
  public static Optional<String> sent(HttpHeaders headers) {
    return headers
        .firstValue(HEADER)
        .filter(v -> v.length() > SCHEME.length())
        .filter(v -> v.substring(0, SCHEME.length()).toLowerCase(Locale.ROOT).equals(SCHEME))
        .map(v -> v.substring(SCHEME.length()).trim());
  }
}
