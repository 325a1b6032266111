package io.github.handlestore.bench;

import static io.github.handlestore.bench.BenchData.PRELOAD;
import static io.github.handlestore.bench.BenchData.TTL;
import static io.github.handlestore.bench.BenchData.VALUE;
import static io.github.handlestore.bench.BenchData.inBatches;
import static io.github.handlestore.bench.BenchData.pick;

import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Lettuce's SET EX and GET against a Redis, through one connection's asynchronous commands: Lettuce
 * as shipped, whose connection is thread-safe and pipelines every caller's commands (it has no pool
 * unless one is added).
 */
final class LettuceWorkload {
  static final String SYSTEM = "lettuce";

  private LettuceWorkload() {}

  /** Connects to the Redis {@code url} names, preloads the keys GET reads. */
  static Workload open(String url) {
    RedisClient redis = RedisClient.create(url);
    try {
      StatefulRedisConnection<String, String> conn = redis.connect();
      return new Workload(
          SYSTEM,
          ops(conn.async()),
          () -> {
            conn.close();
            redis.shutdown();
          });
    } catch (RuntimeException e) {
      redis.shutdown();
      throw e;
    }
  }

  private static Map<String, Op> ops(RedisAsyncCommands<String, String> redis) {
    String[] keys = new String[PRELOAD];
    for (int i = 0; i < PRELOAD; i++) {
      keys[i] = "bench:read:" + i;
    }
    inBatches(PRELOAD, i -> redis.set(keys[i], VALUE).toCompletableFuture());
    SetArgs ex = SetArgs.Builder.ex(TTL);
    Map<String, Op> ops = new LinkedHashMap<>();
    ops.put("set_ex", i -> redis.set("bench:w:" + i, VALUE, ex).toCompletableFuture());
    ops.put(
        "get",
        i ->
            redis
                .get(keys[pick()])
                .toCompletableFuture()
                .thenApply(
                    v -> {
                      if (v == null) {
                        throw new IllegalStateException("a preloaded key is missing");
                      }
                      return v;
                    }));
    return ops;
  }
}
