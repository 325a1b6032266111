package io.github.handlestore.client.testkit;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The cluster test classes share, so the suite starts a few clusters rather than one per test:
 * started by the first class that asks, kept in JUnit's root store, and closed when the run ends.
 * Tests keep apart by namespace. Register it as {@code @RegisterExtension static final
 * SharedCluster CLUSTER = new SharedCluster();}.
 */
public final class SharedCluster implements BeforeAllCallback {
  private Cluster cluster;

  @Override
  public void beforeAll(ExtensionContext context) {
    cluster =
        context
            .getRoot()
            .getStore(ExtensionContext.Namespace.GLOBAL)
            .getOrComputeIfAbsent(
                SharedCluster.class.getName(), k -> Cluster.start(3, false), Cluster.class);
  }

  /** The shared cluster (after {@code beforeAll}). */
  public Cluster get() {
    return cluster;
  }
}
