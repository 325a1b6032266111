package io.github.handlestore.mcp;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;

/**
 * One feed handed to any number of subscribers, each from the moment it subscribes. A subscriber is
 * registered while {@code subscribe} runs (the SDK acknowledges a listen only after it has
 * subscribed, so nothing emitted after the acknowledgement can miss it), and each keeps what it has
 * not yet requested rather than dropping it: a listener never loses a change to its own pace (the
 * SDK's in-process {@code McpChangeFeed} drops for a subscriber without demand).
 */
final class Fanout<T> {
  private final Set<FluxSink<T>> sinks = ConcurrentHashMap.newKeySet();
  private volatile boolean completed;

  /** The feed from now on, for one subscriber each time it is subscribed to. */
  Flux<T> flux() {
    return Flux.create(
        sink -> {
          sinks.add(sink);
          sink.onDispose(() -> sinks.remove(sink));
          if (completed) {
            sink.complete();
          }
        },
        FluxSink.OverflowStrategy.BUFFER);
  }

  /** Hands {@code item} to every current subscriber. */
  void emit(T item) {
    for (FluxSink<T> sink : sinks) {
      sink.next(item);
    }
  }

  /** Ends every subscription, and any later one at once. */
  void complete() {
    completed = true;
    for (FluxSink<T> sink : sinks) {
      sink.complete();
    }
  }

  /** How many subscribers there are now. */
  int subscribers() {
    return sinks.size();
  }
}
