package io.github.handlestore.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.github.handlestore.client.errors.InvalidArgumentException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ClientConfig#fromEnv()} reads the HANDLESTORE_* variables the other clients read. */
class EnvTest {
  @Test
  void endpointsNamespaceAndToken() {
    ClientConfig cfg =
        ClientConfig.fromEnv(
                Map.of(
                    "HANDLESTORE_ENDPOINTS", "127.0.0.1:7401, 127.0.0.1:7402,,",
                    "HANDLESTORE_NAMESPACE", "shop",
                    "HANDLESTORE_TOKEN", "hs1_abc"))
            .build();
    assertEquals(List.of("127.0.0.1:7401", "127.0.0.1:7402"), cfg.endpoints());
    assertEquals("shop", cfg.namespace());
    assertEquals("hs1_abc", cfg.token);
    assertNull(cfg.tls);
    assertEquals("default", ClientConfig.fromEnv(Map.of()).build().namespace());
  }

  @Test
  void theTokenFileGivesItsFirstLineUnlessATokenIsSet(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("token");
    Files.writeString(file, "\n  hs1_from_file  \nsecond line\n");
    Map<String, String> env = Map.of("HANDLESTORE_TOKEN_FILE", file.toString());
    assertEquals("hs1_from_file", ClientConfig.fromEnv(env).build().token);
    Map<String, String> both =
        Map.of("HANDLESTORE_TOKEN_FILE", file.toString(), "HANDLESTORE_TOKEN", "t");
    assertEquals("t", ClientConfig.fromEnv(both).build().token);
    Files.writeString(file, "  \n");
    assertThrows(InvalidArgumentException.class, () -> ClientConfig.fromEnv(env));
  }

  @Test
  void aCertificateNeedsItsKey(@TempDir Path dir) throws IOException {
    Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
    Map<String, String> env =
        Map.of("HANDLESTORE_CACERT", ca.toString(), "HANDLESTORE_CERT", ca.toString());
    assertThrows(InvalidArgumentException.class, () -> ClientConfig.fromEnv(env));
    ClientConfig cfg = ClientConfig.fromEnv(Map.of("HANDLESTORE_CACERT", ca.toString())).build();
    assertEquals(1, cfg.tls.ca().length);
  }
}
