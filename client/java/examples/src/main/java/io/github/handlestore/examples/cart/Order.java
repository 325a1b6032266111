package io.github.handlestore.examples.cart;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * The record a checkout writes under its order id (store {@code order}, never expiring): which
 * cart, and its lines.
 *
 * @param cartId the cart checked out
 * @param lines its lines at checkout
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record Order(@JsonProperty("cart_id") String cartId, List<Line> lines) {
  /** Keeps a copy of the lines. */
  public Order {
    lines = lines == null ? List.of() : List.copyOf(lines);
  }
}
