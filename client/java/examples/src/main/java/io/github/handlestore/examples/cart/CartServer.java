package io.github.handlestore.examples.cart;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientConfig;
import jakarta.servlet.http.HttpServlet;

/**
 * A stateless MCP cart server on the MCP Java SDK (mcp-core 2.2.0) whose carts live in handlestore,
 * so any number of replicas behind a load balancer share them: the Java twin of
 * client/rust/examples/cart_server, client/python/examples/fastmcp_cart.py,
 * client/ts/examples/cartServer.ts and client/go/gosdk/examples/cartserver, with the same tools,
 * stores ({@code cart}, prefix {@code cart}, and {@code order}) and cart JSON, so replicas in the
 * five languages serve one another's carts.
 *
 * <pre>
 * java -jar handlestore-examples-0.1.0-all.jar --listen 127.0.0.1:8084 \
 *     --endpoints 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403
 * </pre>
 *
 * (or HANDLESTORE_ENDPOINTS, HANDLESTORE_CACERT, HANDLESTORE_TOKEN... as {@link
 * ClientConfig#fromEnv()} reads them). It serves protocol 2026-07-28 on the SDK's modern server and
 * 2025-11-25 and older on its legacy stateless server, at one endpoint ({@link ProtocolRouter}).
 * {@code --kv redis --redis URL} keeps the carts in Redis, {@code --kv memory} in this process, for
 * the bench. Prints {@code listening <port>} once it serves.
 */
public final class CartServer {
  /** The server's name, as the twins give it. */
  public static final String NAME = "handlestore-cart-server";

  /** The server's version. */
  public static final String VERSION = "0.1.0";

  private CartServer() {}

  public static void main(String[] argv) {
    CartOptions options;
    try {
      options = CartOptions.parse(argv);
    } catch (IllegalArgumentException e) {
      System.err.println("cart server: " + e.getMessage());
      System.err.println(CartOptions.USAGE);
      System.exit(2);
      return;
    }
    CartBackend backend;
    try {
      backend = backend(options);
    } catch (RuntimeException e) {
      System.err.println("cart server: " + e.getMessage());
      System.exit(2);
      return;
    }
    CartHttpServer http = serve(options, backend);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  http.close();
                  backend.close();
                }));
    System.out.println("listening " + http.port());
    System.out.flush();
    http.await();
  }

  /** Serves the cart tools over {@code backend} on the address {@code options} name. */
  static CartHttpServer serve(CartOptions options, CartBackend backend) {
    CartTools tools = new CartTools(backend);
    HttpServlet router =
        new ProtocolRouter(
            ModernCartServer.servlet(tools, CartHttpServer.ENDPOINT),
            LegacyCartServer.servlet(tools, CartHttpServer.ENDPOINT));
    return CartHttpServer.start(options.host(), options.port(), router);
  }

  /** The backend {@code --kv} names. */
  static CartBackend backend(CartOptions options) {
    return switch (options.kv()) {
      case "handlestore" -> new HandlestoreCarts(client(options), options.cartTtl());
      case "redis" -> RedisCarts.connect(options.redis(), options.cartTtl());
      case "memory" -> new MemoryCarts(options.cartTtl());
      default -> throw new IllegalArgumentException("no backend " + options.kv());
    };
  }

  /** A client of the cluster HANDLESTORE_* name, with --endpoints and --namespace over them. */
  private static Client client(CartOptions options) {
    ClientConfig.Builder config = ClientConfig.fromEnv();
    if (options.endpoints() != null) {
      config.endpoints(options.endpoints());
    }
    if (options.namespace() != null) {
      config.namespace(options.namespace());
    }
    return new Client(config.build());
  }
}
