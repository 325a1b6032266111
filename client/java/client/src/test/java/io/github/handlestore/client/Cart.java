package io.github.handlestore.client;

import java.util.ArrayList;
import java.util.List;

/** A cart, as the cart servers of every language keep it: {"items": [...]}. */
public final class Cart {
  public List<String> items = new ArrayList<>();

  /** An empty cart. */
  public Cart() {}

  /** A cart holding {@code items}. */
  public static Cart of(String... items) {
    Cart c = new Cart();
    c.items.addAll(List.of(items));
    return c;
  }

  /** This cart with {@code item} added. */
  public Cart add(String item) {
    items.add(item);
    return this;
  }
}
