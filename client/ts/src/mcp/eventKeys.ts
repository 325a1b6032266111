/**
 * Where a stream's pieces live (proto/vectors/mcp_events.json, the layout of
 * the Rust, Python and Go twins), under a prefix in the client's namespace:
 *
 * - `streams/<digest of the stream id>`: the head `{token, seq}`;
 * - `tokens/<token>`: the stream id;
 * - `live/<token>`: the origin's liveness record `{requests}`;
 * - `requests/<token>`: the same `{requests}`, kept as long as the events;
 * - `events/<token>/<bucket>/<seq>`: one event `{message}`.
 *
 * An event id is `<token>.<seq>`.
 */
import { BUCKET, MAX_SEQ, WIDTHS } from "./contract.js";
import { digestName, padded } from "./keys.js";

/** Digits without leading zeros: one id per event. */
const EVENT_ID = /^([A-Z2-7]{26})\.(0|[1-9][0-9]{0,15})$/;

/** `<token>.<seq>` as the stores mint them; undefined for anything else (a `Last-Event-ID` is whatever a client sends). */
export function parseEventId(eventId: unknown): { token: string; seq: number } | undefined {
  if (typeof eventId !== "string") return undefined;
  const m = EVENT_ID.exec(eventId);
  if (!m?.[1] || !m[2]) return undefined;
  const seq = Number(m[2]);
  return Number.isSafeInteger(seq) && seq <= MAX_SEQ ? { token: m[1], seq } : undefined;
}

export function eventId(token: string, seq: number): string {
  return `${token}.${seq}`;
}

/** The keys of one store's streams under `prefix`. */
export class EventKeys {
  constructor(readonly prefix: string) {}

  /** The head of stream `name` (the scope, if any, is part of the name). */
  head(name: string): string {
    return `${this.prefix}/streams/${digestName(name)}`;
  }

  token(token: string): string {
    return `${this.prefix}/tokens/${token}`;
  }

  live(token: string): string {
    return `${this.prefix}/live/${token}`;
  }

  requests(token: string): string {
    return `${this.prefix}/requests/${token}`;
  }

  /** Every event of stream `token`. */
  events(token: string): string {
    return `${this.prefix}/events/${token}/`;
  }

  bucket(token: string, bucket: number): string {
    return `${this.events(token)}${padded(bucket, WIDTHS.bucket)}/`;
  }

  event(token: string, seq: number): string {
    return `${this.bucket(token, Math.floor(seq / BUCKET))}${padded(seq, WIDTHS.seq)}`;
  }

  /** The sequence number an event key names; undefined for any other key. */
  seqOf(key: string): number | undefined {
    const digits = key.slice(key.lastIndexOf("/") + 1);
    return /^[0-9]{1,20}$/.test(digits) && Number.isSafeInteger(Number(digits)) ? Number(digits) : undefined;
  }
}
