import { type ChainableCommander, Redis } from "ioredis";
import { newHandleId } from "../src/index.js";
import { type Cart, type CartBackend, checked, hasRequest, type Line, type Order } from "./cartBackends.js";

/**
 * Carts in Redis, as a careful author keeps them: `cart:<id>` holds the
 * cart's lines as JSON with the cart's TTL (SET PX NX when created, KEEPTTL
 * on each add); an add is WATCH, GET, MULTI/SET/EXEC on a connection of its
 * own while it runs (a WATCH belongs to a connection), retried when another
 * writer got there first; the checkout is SET NX of `order-of:<id>` (the
 * first one wins, exactly once), which every add watches too, so no add
 * lands after it; the order record is `order:<order_id>`.
 */
export class RedisCarts implements CartBackend {
  /** Connections for WATCH transactions, idle between them. */
  private readonly idle: Redis[] = [];

  constructor(
    private readonly redis: Redis,
    private readonly cartTtlMs: number,
  ) {}

  /** SET key value NX, with the carts' TTL if they have one, queued on `c`. */
  private setNew(c: ChainableCommander, key: string, value: string): ChainableCommander {
    const px = Math.max(1, Math.round(this.cartTtlMs));
    return this.cartTtlMs > 0 ? c.set(key, value, "PX", px, "NX") : c.set(key, value, "NX");
  }

  async create(): Promise<string> {
    for (;;) {
      const cartId = newHandleId("cart");
      const [set] = answers(await this.setNew(this.redis.pipeline(), `cart:${cartId}`, '{"lines":[]}').exec());
      if (set) return cartId;
    }
  }

  async get(cartId: string): Promise<Cart | undefined> {
    checked(cartId);
    const [cart, orderId] = await this.redis.mget(`cart:${cartId}`, `order-of:${cartId}`);
    return shown(cart, orderId);
  }

  async add(cartId: string, line: Line): Promise<Cart | undefined> {
    checked(cartId);
    return this.watching((conn) => this.addOn(conn, cartId, line));
  }

  private async addOn(conn: Redis, cartId: string, line: Line): Promise<Cart | undefined> {
    const keys = [`cart:${cartId}`, `order-of:${cartId}`] as const;
    for (;;) {
      const [, [json, orderId]] = await Promise.all([conn.watch(...keys), conn.mget(...keys)]);
      const cart = shown(json, orderId);
      if (!cart || cart.order_id || hasRequest(cart, line)) {
        await conn.unwatch();
        return cart;
      }
      cart.lines.push(line);
      // EXEC answers null if a watched key changed since WATCH: read again.
      if (await conn.multi().set(keys[0], JSON.stringify(cart), "KEEPTTL").exec()) return cart;
    }
  }

  /** Runs `fn` on an idle transaction connection (a new one if none); a failed one is closed. */
  private async watching<R>(fn: (conn: Redis) => Promise<R>): Promise<R> {
    const conn = this.idle.pop() ?? this.redis.duplicate();
    try {
      const r = await fn(conn);
      this.idle.push(conn);
      return r;
    } catch (e) {
      conn.disconnect();
      throw e;
    }
  }

  async checkout(cartId: string, candidate: string): Promise<Cart | undefined> {
    const cart = await this.get(cartId);
    if (!cart || cart.order_id || cart.lines.length === 0) return cart;
    // Atomically: the first SET NX wins; the cart as it is then (no add
    // lands after order-of is set), with whichever order won.
    const won = this.setNew(this.redis.multi(), `order-of:${cartId}`, candidate);
    const [, winner, json] = answers(await won.get(`order-of:${cartId}`).get(`cart:${cartId}`).exec());
    return shown(json, winner);
  }

  async recordOrder(orderId: string, order: Order): Promise<void> {
    await this.redis.set(`order:${orderId}`, JSON.stringify(order));
  }
}

/** A pipeline's or transaction's replies (the first error thrown); none for an aborted transaction. */
function answers(replies: [Error | null, unknown][] | null): (string | null)[] {
  return (replies ?? []).map(([e, v]) => {
    if (e) throw e;
    return v as string | null;
  });
}

/** A cart as stored in Redis (its lines) with its order, if one was recorded. */
function shown(json: string | null | undefined, orderId: string | null | undefined): Cart | undefined {
  if (!json) return undefined;
  const cart = JSON.parse(json) as Cart;
  return orderId ? { ...cart, order_id: orderId } : cart;
}

/** Carts in the Redis at `url` (`redis://host:port/`). */
export function redisCarts(url: string, cartTtlMs: number): RedisCarts {
  return new RedisCarts(new Redis(url), cartTtlMs);
}
