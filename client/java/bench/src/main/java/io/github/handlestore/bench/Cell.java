package io.github.handlestore.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;

/**
 * One line of output, the fields every client bench prints (tests/bench/src/client_rows.rs):
 * written in snake case ({@code p50_us}, {@code client_cpu_us}, {@code first_error}).
 *
 * @param system the client measured ({@code java-client}, {@code lettuce})
 * @param op the operation ({@code mint}, {@code set_ex}, ...)
 * @param concurrency calls in flight at once
 * @param ops calls that succeeded
 * @param errors calls that failed
 * @param seconds the cell's wall time
 * @param throughput {@code ops / seconds}
 * @param p50Us the median latency of the calls that succeeded, whole µs
 * @param p99Us their 99th percentile, whole µs
 * @param clientCpuUs this process's CPU (user and system) per call that succeeded, µs: the client's
 *     own cost
 * @param firstError the first failure, or null
 * @param warmupS how long the workload ran, unreported, before the cell ({@link Warmup})
 */
record Cell(
    String system,
    String op,
    int concurrency,
    long ops,
    long errors,
    double seconds,
    double throughput,
    long p50Us,
    long p99Us,
    double clientCpuUs,
    String firstError,
    double warmupS) {
  private static final ObjectMapper JSON =
      new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);

  /** The same cell, after {@code warm} seconds of warm-up. */
  Cell withWarmup(double warm) {
    return new Cell(
        system,
        op,
        concurrency,
        ops,
        errors,
        seconds,
        throughput,
        p50Us,
        p99Us,
        clientCpuUs,
        firstError,
        warm);
  }

  /** The cell as one line of JSON. */
  String json() {
    try {
      return JSON.writeValueAsString(this);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a cell is always JSON", e);
    }
  }
}
