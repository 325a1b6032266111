package io.github.handlestore.bench;

import java.util.Map;

/**
 * One system's operations, opened and preloaded: what a cell runs, in order, at each count of calls
 * in flight.
 *
 * @param system the name the cells give it
 * @param ops each operation by its name, in the order they run
 * @param closer what ends its connections
 */
record Workload(String system, Map<String, Op> ops, AutoCloseable closer) {}
