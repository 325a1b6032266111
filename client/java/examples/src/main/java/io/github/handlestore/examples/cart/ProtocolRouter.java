package io.github.handlestore.examples.cart;

import io.modelcontextprotocol.spec.ProtocolVersions;
import jakarta.servlet.ServletConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Set;

/**
 * One endpoint for both protocol eras, as the twins have: a request naming a 2026 protocol in its
 * {@code MCP-Protocol-Version} header (every modern request does) goes to the modern server; one
 * without the header ({@code initialize}) or naming a handshake-era version goes to the legacy
 * stateless server. A version neither knows goes to the modern server, whose refusal lists the
 * versions it speaks.
 */
final class ProtocolRouter extends HttpServlet {
  private static final long serialVersionUID = 1L;

  /** The versions the legacy server speaks. */
  static final Set<String> LEGACY_VERSIONS =
      Set.of(
          ProtocolVersions.MCP_2024_11_05,
          ProtocolVersions.MCP_2025_03_26,
          ProtocolVersions.MCP_2025_06_18,
          ProtocolVersions.MCP_2025_11_25);

  private static final String VERSION_HEADER = "MCP-Protocol-Version";

  private final HttpServlet modern;
  private final HttpServlet legacy;

  ProtocolRouter(HttpServlet modern, HttpServlet legacy) {
    this.modern = modern;
    this.legacy = legacy;
  }

  @Override
  public void init(ServletConfig config) throws ServletException {
    super.init(config);
    modern.init(config);
    legacy.init(config);
  }

  @Override
  protected void service(HttpServletRequest req, HttpServletResponse resp)
      throws ServletException, IOException {
    (isLegacy(req.getHeader(VERSION_HEADER)) ? legacy : modern).service(req, resp);
  }

  @Override
  public void destroy() {
    modern.destroy();
    legacy.destroy();
  }

  /** Whether a request with this {@code MCP-Protocol-Version} (null: none) is the legacy one's. */
  static boolean isLegacy(String version) {
    return version == null || LEGACY_VERSIONS.contains(version.strip());
  }
}
