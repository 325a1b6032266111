package io.github.handlestore.client;

/**
 * What a write did.
 *
 * @param existed a live entry existed before
 * @param revision the write's revision (for {@link Consistency#atLeast} reads)
 */
public record WriteOutcome(boolean existed, long revision) {}
