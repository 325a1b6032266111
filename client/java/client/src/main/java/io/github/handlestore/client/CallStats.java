package io.github.handlestore.client;

/**
 * Requests sent and the calls that carried them: fewer calls than requests means that concurrent
 * requests shared calls.
 *
 * @param sent requests sent
 * @param calls calls that carried them
 */
public record CallStats(long sent, long calls) {}
