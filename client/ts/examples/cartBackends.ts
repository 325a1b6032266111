/**
 * Where the cart servers' carts live: the cart JSON the Rust, Python and
 * TypeScript twins share, and the backends of `cartServer.ts` over one
 * interface (the tool handlers are written once): the cluster's handles,
 * and a Map of this process. The Redis backend is in `cartRedis.ts`,
 * loaded only when asked for (`--kv redis`), so that the example needs
 * no Redis client otherwise.
 */
import { type Client, checkHandleId, type HandleStore, InvalidArgumentError, newHandleId, Ttl } from "../src/index.js";

export const CART_URI = "cart://";

/** One add_item call's line. */
export interface Line {
  sku: string;
  quantity: number;
  /** The caller's idempotency key, if it gave one. */
  request_id?: string;
}

export interface Cart {
  lines: Line[];
  /** Set once, by the first checkout. */
  order_id?: string;
}

export interface Order {
  cart_id: string;
  lines: Line[];
}

/**
 * Where the carts and orders live: the tool handlers are written once over
 * it. Each call throws InvalidArgumentError for a malformed cart id, and
 * anything else when the store fails.
 */
export interface CartBackend {
  /** A new empty cart; its id. */
  create(): Promise<string>;
  /** The cart, or undefined if there is none. */
  get(cartId: string): Promise<Cart | undefined>;
  /**
   * Adds `line` atomically, unless the cart is checked out or holds a line
   * with its request_id; the cart after, or undefined if there is none.
   */
  add(cartId: string, line: Line): Promise<Cart | undefined>;
  /**
   * Records `candidate` as the cart's order, unless it has one or is empty
   * (once, whoever calls); the cart after, or undefined if there is none.
   */
  checkout(cartId: string, candidate: string): Promise<Cart | undefined>;
  /** Writes the order record (a repeat writes the same content again). */
  recordOrder(orderId: string, order: Order): Promise<void>;
}

export interface Stores {
  readonly carts: HandleStore<Cart>;
  readonly orders: HandleStore<Order>;
}

/** The cart and order stores of the Rust and Python twins. */
export function stores(client: Client, cartTtlMs: number): Stores {
  return {
    carts: client.handleStore<Cart>("cart", { prefix: "cart", defaultTtl: cartTtlMs }),
    orders: client.handleStore<Order>("order"),
  };
}

export function hasRequest(cart: Cart, line: Line): boolean {
  return line.request_id !== undefined && cart.lines.some((l) => l.request_id === line.request_id);
}

/** Carts as the cluster's handles: compare-and-set updates (`HandleStore.update`). */
export function handlestoreCarts(s: Stores): CartBackend {
  return {
    create: () => s.carts.mint({ lines: [] }),
    get: (cartId) => s.carts.get(cartId),
    add: (cartId, line) =>
      s.carts.update(cartId, (c) => {
        if (!c.order_id && !hasRequest(c, line)) c.lines.push(line);
      }),
    checkout: (cartId, candidate) =>
      s.carts.update(cartId, (c) => {
        if (!c.order_id && c.lines.length > 0) c.order_id = candidate;
      }),
    recordOrder: async (orderId, order) => {
      await s.orders.put(orderId, order, { ttl: Ttl.NEVER });
    },
  };
}

/** InvalidArgumentError unless `cartId` is a well-formed handle id. */
export function checked(cartId: string): void {
  const why = checkHandleId(cartId);
  if (why) throw new InvalidArgumentError(why);
}

/** Carts in a Map of this process, with their expiry: one replica only. */
export function memoryCarts(cartTtlMs: number): CartBackend {
  const carts = new Map<string, { cart: Cart; expires: number }>();
  const orders = new Map<string, Order>();
  const live = (cartId: string): Cart | undefined => {
    checked(cartId);
    const held = carts.get(cartId);
    if (!held || held.expires > Date.now()) return held?.cart;
    carts.delete(cartId);
    return undefined;
  };
  const copy = (cart: Cart | undefined) => (cart ? structuredClone(cart) : undefined);
  return {
    create: async () => {
      const cartId = newHandleId("cart");
      carts.set(cartId, { cart: { lines: [] }, expires: cartTtlMs > 0 ? Date.now() + cartTtlMs : Infinity });
      return cartId;
    },
    get: async (cartId) => copy(live(cartId)),
    add: async (cartId, line) => {
      const cart = live(cartId);
      if (cart && !cart.order_id && !hasRequest(cart, line)) cart.lines.push(line);
      return copy(cart);
    },
    checkout: async (cartId, candidate) => {
      const cart = live(cartId);
      if (cart && !cart.order_id && cart.lines.length > 0) cart.order_id = candidate;
      return copy(cart);
    },
    recordOrder: async (orderId, order) => {
      orders.set(orderId, order);
    },
  };
}
