package io.github.handlestore.examples.cart;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A cart as every twin stores and shows it: {@code {"lines":[...]}}, plus {@code order_id} once a
 * checkout recorded one. Immutable: the two changes a tool makes are {@link #adding} and {@link
 * #checkingOut}, written once here and applied atomically by each backend; each answers this very
 * cart when it changes nothing, so a backend can skip the write.
 *
 * @param lines the lines, in the order they were added
 * @param orderId the order the first checkout recorded, or null
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonIgnoreProperties(ignoreUnknown = true)
public record Cart(List<Line> lines, @JsonProperty("order_id") String orderId) {
  /** A new cart. */
  public static final Cart EMPTY = new Cart(List.of(), null);

  /** Reads {@code null} lines (a twin's nil slice) as none, and an empty order id as none. */
  public Cart {
    lines = lines == null ? List.of() : List.copyOf(lines);
    orderId = orderId == null || orderId.isEmpty() ? null : orderId;
  }

  /** Whether a checkout recorded an order. */
  public boolean checkedOut() {
    return orderId != null;
  }

  /**
   * The cart with {@code line} added; this cart if it is checked out or already holds a line with
   * the same request id (a retried add_item).
   */
  public Cart adding(Line line) {
    if (checkedOut() || holdsRequest(line.requestId())) {
      return this;
    }
    List<Line> more = new ArrayList<>(lines);
    more.add(line);
    return new Cart(more, null);
  }

  /**
   * The cart with {@code candidate} as its order; this cart if it has an order already (whoever
   * came first wins) or no lines.
   */
  public Cart checkingOut(String candidate) {
    if (checkedOut() || lines.isEmpty()) {
      return this;
    }
    return new Cart(lines, Objects.requireNonNull(candidate, "candidate"));
  }

  private boolean holdsRequest(String requestId) {
    return requestId != null && lines.stream().anyMatch(l -> requestId.equals(l.requestId()));
  }
}
