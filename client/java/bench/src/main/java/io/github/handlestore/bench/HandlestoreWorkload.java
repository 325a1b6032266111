package io.github.handlestore.bench;

import static io.github.handlestore.bench.BenchData.PRELOAD;
import static io.github.handlestore.bench.BenchData.TTL;
import static io.github.handlestore.bench.BenchData.VALUE;
import static io.github.handlestore.bench.BenchData.inBatches;
import static io.github.handlestore.bench.BenchData.pick;

import io.github.handlestore.client.Client;
import io.github.handlestore.client.ClientConfig;
import io.github.handlestore.client.HandleStore;
import io.github.handlestore.client.StateTool;
import io.github.handlestore.client.StoreItem;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Java client's operations against a cluster: mint, a linearizable get and a put of a handle,
 * and a linearizable state get, the rows the other languages' drivers give theirs.
 */
final class HandlestoreWorkload {
  static final String SYSTEM = "java-client";

  private HandlestoreWorkload() {}

  /** Connects to {@code endpoints} (comma-separated), preloads the keys the reads read. */
  static Workload open(String endpoints) {
    Client client =
        new Client(ClientConfig.builder().endpoints(endpoints).namespace("bench").build());
    try {
      return new Workload(SYSTEM, ops(client), client);
    } catch (RuntimeException e) {
      client.close();
      throw e;
    }
  }

  private static Map<String, Op> ops(Client client) {
    HandleStore<String> store = client.handleStore("bench", String.class).defaultTtl(TTL).build();
    String[] handles = new String[PRELOAD];
    inBatches(PRELOAD, i -> store.mint(VALUE).thenAccept(id -> handles[i] = id));
    StateTool tool = client.stateTool();
    String[] names = new String[PRELOAD];
    List<StoreItem> items = new ArrayList<>();
    for (int i = 0; i < PRELOAD; i++) {
      names[i] = "bench/read/" + i;
      items.add(StoreItem.of(names[i], VALUE));
    }
    for (int start = 0; start < PRELOAD; start += 100) {
      tool.batchStore(items.subList(start, Math.min(PRELOAD, start + 100))).join();
    }
    Map<String, Op> ops = new LinkedHashMap<>();
    ops.put("mint", i -> store.mint(VALUE));
    ops.put(
        "get", i -> store.get(handles[pick()]).thenApply(v -> present(v, "a preloaded handle")));
    ops.put("put", i -> store.put(handles[pick()], VALUE));
    ops.put(
        "state_get",
        i -> tool.get(names[pick()], String.class).thenApply(v -> present(v, "a preloaded key")));
    return ops;
  }

  private static <T> T present(Optional<T> value, String what) {
    return value.orElseThrow(() -> new IllegalStateException(what + " is missing"));
  }
}
