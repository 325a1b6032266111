package io.github.handlestore.client;

/**
 * What a delete did.
 *
 * @param count live keys deleted
 * @param more a prefix delete left keys under the prefix: call again
 * @param revision the delete's revision
 */
public record Deleted(long count, boolean more, long revision) {}
