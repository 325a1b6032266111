package io.github.handlestore.examples.cart;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The cart server's command line, the TypeScript twin's: {@code --listen host:port} (port 0: any),
 * {@code --kv handlestore|redis|memory}, {@code --redis URL}, {@code --endpoints a,b,c} and {@code
 * --namespace NS} (else the {@code HANDLESTORE_*} variables), {@code --cart-ttl 1h}. Flags are
 * {@code --name value} or {@code --name=value}; anything else is refused with a reason.
 *
 * @param host the address to listen on
 * @param port the port (0: any free one)
 * @param kv where the carts live: handlestore, redis or memory
 * @param redis the Redis URL ({@code --kv redis}), or null
 * @param endpoints the cluster's nodes, overriding HANDLESTORE_ENDPOINTS, or null
 * @param namespace the namespace, overriding HANDLESTORE_NAMESPACE, or null
 * @param cartTtl how long a cart is kept (zero: forever)
 */
public record CartOptions(
    String host,
    int port,
    String kv,
    String redis,
    String endpoints,
    String namespace,
    Duration cartTtl) {
  /** The usage line. */
  public static final String USAGE =
      "usage: cart-server [--listen HOST:PORT] [--kv handlestore|redis|memory] [--redis URL]"
          + " [--endpoints HOST:PORT,...] [--namespace NS] [--cart-ttl 1h]";

  private static final Set<String> FLAGS =
      Set.of("listen", "kv", "redis", "endpoints", "namespace", "cart-ttl");
  private static final Set<String> BACKENDS = Set.of("handlestore", "redis", "memory");

  /** Reads {@code argv}; an {@link IllegalArgumentException} says what is wrong. */
  public static CartOptions parse(String... argv) {
    Map<String, String> given = flags(argv);
    String listen = given.getOrDefault("listen", "127.0.0.1:8084");
    int colon = listen.lastIndexOf(':');
    if (colon < 0) {
      throw new IllegalArgumentException("--listen is HOST:PORT, not \"" + listen + "\"");
    }
    String host = listen.substring(0, colon).replaceAll("^\\[|\\]$", "");
    String kv = given.getOrDefault("kv", "handlestore");
    if (!BACKENDS.contains(kv)) {
      throw new IllegalArgumentException(
          "--kv is handlestore, redis or memory, not \"" + kv + "\"");
    }
    String redis = given.get("redis");
    if (kv.equals("redis") && redis == null) {
      throw new IllegalArgumentException("--kv redis needs --redis URL");
    }
    return new CartOptions(
        host.isEmpty() ? "127.0.0.1" : host,
        port(listen.substring(colon + 1)),
        kv,
        redis,
        given.get("endpoints"),
        given.get("namespace"),
        duration(given.getOrDefault("cart-ttl", "1h")));
  }

  private static Map<String, String> flags(String[] argv) {
    Map<String, String> out = new HashMap<>();
    for (int i = 0; i < argv.length; i++) {
      String arg = argv[i];
      if (!arg.startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument \"" + arg + "\"");
      }
      int eq = arg.indexOf('=');
      String name = eq < 0 ? arg.substring(2) : arg.substring(2, eq);
      if (!FLAGS.contains(name)) {
        throw new IllegalArgumentException("unknown flag --" + name);
      }
      String value;
      if (eq >= 0) {
        value = arg.substring(eq + 1);
      } else if (i + 1 < argv.length) {
        value = argv[++i];
      } else {
        throw new IllegalArgumentException("--" + name + " needs a value");
      }
      out.put(name, value);
    }
    return out;
  }

  private static int port(String text) {
    try {
      int port = Integer.parseInt(text);
      if (port >= 0 && port <= 65535) {
        return port;
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new IllegalArgumentException("--listen port \"" + text + "\" is not 0 to 65535");
  }

  /** "1h", "30m", "90s", "500ms", or plain seconds ("2.5"), as the twins read it. */
  static Duration duration(String text) {
    String t = text.strip().toLowerCase(Locale.ROOT);
    String[][] units = {{"ms", "1"}, {"h", "3600000"}, {"m", "60000"}, {"s", "1000"}};
    String number = t;
    BigDecimal perUnit = BigDecimal.valueOf(1000);
    for (String[] u : units) {
      if (t.endsWith(u[0])) {
        number = t.substring(0, t.length() - u[0].length());
        perUnit = new BigDecimal(u[1]);
        break;
      }
    }
    if (!number.matches("\\d+(\\.\\d+)?")) {
      throw new IllegalArgumentException("--cart-ttl: not a duration: \"" + text + "\"");
    }
    return Duration.ofMillis(new BigDecimal(number).multiply(perUnit).longValue());
  }
}
