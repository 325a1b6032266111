package io.github.handlestore.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.modelcontextprotocol.modern.client.McpSyncClient;
import io.modelcontextprotocol.modern.client.McpSyncSubscriptionListener;
import io.modelcontextprotocol.modern.client.SubscriptionEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A {@code subscriptions/listen} stream opened by the SDK's client, its events queued for the test:
 * open() returns once the server acknowledged it (the SDK's {@code Subscribed} event).
 */
final class Listener implements McpSyncSubscriptionListener, AutoCloseable {
  private final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
  // Held while listening: the JDK HttpClient under the SDK's transport closes its connections
  // once it is garbage collected, and an open listen stream alone does not keep it reachable.
  private McpSyncClient client;
  private McpSyncClient.Listening listening;

  /** Listens on {@code client} for updates of {@code uris}. */
  static Listener open(McpSyncClient client, String... uris) {
    return open(client, false, uris);
  }

  /** Listens on {@code client} for updates of {@code uris}, and tools list changes if asked. */
  static Listener open(McpSyncClient client, boolean tools, String... uris) {
    Listener l = new Listener();
    l.client = client;
    var spec = client.listen().resourceUpdates(uris);
    l.listening = (tools ? spec.toolsChanged() : spec).open(l);
    Object first = l.next();
    if (first instanceof Throwable t) {
      throw new AssertionError("the listen stream failed before its acknowledgement", t);
    }
    assertInstanceOf(SubscriptionEvent.Subscribed.class, first, "acknowledged first");
    return l;
  }

  @Override
  public void onEvent(SubscriptionEvent event) {
    events.add(event);
  }

  @Override
  public void onError(Throwable error) {
    events.add(error);
  }

  @Override
  public void onComplete() {
    events.add("completed");
  }

  /** The next event (or the error or "completed" that ended the stream), within 30 s. */
  Object next() {
    try {
      Object e = events.poll(30, TimeUnit.SECONDS);
      assertNotNull(e, "nothing heard within 30 s");
      return e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** The URIs of the next {@code n} events, which must all be resource updates. */
  List<String> updates(int n) {
    List<String> uris = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      uris.add(assertInstanceOf(SubscriptionEvent.ResourceUpdated.class, next()).uri());
    }
    return uris;
  }

  /** Asserts the next event is an update of {@code uri}. */
  void expectUpdate(String uri) {
    assertEquals(List.of(uri), updates(1));
  }

  @Override
  public void close() {
    listening.close();
    client = null;
  }
}
