package io.github.handlestore.client;

import java.util.Objects;

/**
 * How a {@link StateTool#list} reads.
 *
 * @param limit keys per page (0: 100, at most 1000)
 * @param pageToken the previous page's {@link ListPage#nextPageToken()} ("": the first page)
 * @param withValues whether entries carry their values
 * @param consistency this read's consistency (null: the tool's)
 */
public record ListOptions(
    int limit, String pageToken, boolean withValues, Consistency consistency) {
  /** The first page of 100 keys, without values, at the tool's consistency. */
  public static final ListOptions DEFAULT = new ListOptions(0, "", false, null);

  /** Options; a null page token is the first page. */
  public ListOptions {
    if (limit < 0) {
      throw io.github.handlestore.client.errors.HandlestoreException.invalid(
          "a list's limit must not be negative");
    }
    pageToken = Objects.requireNonNullElse(pageToken, "");
  }

  /** These options with another page size. */
  public ListOptions withLimit(int limit) {
    return new ListOptions(limit, pageToken, withValues, consistency);
  }

  /** These options from another page. */
  public ListOptions withPageToken(String token) {
    return new ListOptions(limit, token, withValues, consistency);
  }

  /** These options with or without values. */
  public ListOptions withValues(boolean values) {
    return new ListOptions(limit, pageToken, values, consistency);
  }

  /** These options at another consistency. */
  public ListOptions withConsistency(Consistency c) {
    return new ListOptions(limit, pageToken, withValues, c);
  }
}
