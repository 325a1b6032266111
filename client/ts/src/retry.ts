/**
 * When a call is tried again, where, and after how long: the error table
 * decides for a status with a reason; otherwise UNAVAILABLE, a deadline, an
 * abort or a cancel (what a lost node or connection looks like) is worth
 * another node, as in the Rust and Python clients.
 */
import { status as Code, type Metadata } from "@grpc/grpc-js";
import type { Status } from "./errors.js";
import { isReason, REASONS } from "./gen/reasons.js";

/** The metadata key a node names the leader's client address under. */
export const LEADER_HEADER = "x-handlestore-leader";
/** How long a node that refused a call for load asks clients to wait. */
export const PUSHBACK_HEADER = "grpc-retry-pushback-ms";
/** The most a pushback is honoured, in ms. */
const MAX_PUSHBACK = 5_000;

const RETRYABLE = new Set<Code>([Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.CANCELLED]);

/**
 * A TLS handshake that failed (the node's certificate is not from the
 * trusted CA, or it refused ours): it would fail again, so it is not
 * retried.
 */
export function tlsRefused(s: Status): boolean {
  return s.code === Code.UNAVAILABLE && !s.detail.reason && /certificate|handshake|ssl|tls/i.test(s.message);
}

/** Worth trying again elsewhere: the node could not serve it now. */
export function retryable(s: Status): boolean {
  const reason = s.detail.reason;
  if (isReason(reason)) return REASONS[reason].retried === "yes";
  if (RETRYABLE.has(s.code)) return !tlsRefused(s);
  // A connection reset can surface as UNKNOWN or INTERNAL without a reason.
  return (s.code === Code.UNKNOWN || s.code === Code.INTERNAL) && !reason;
}

/** A watch cut off because its consumer fell behind: resumed from its position. */
export function resumable(s: Status): boolean {
  const reason = s.detail.reason;
  return isReason(reason) && REASONS[reason].retried === "resume";
}

function header(metadata: Metadata | undefined, key: string): string | undefined {
  const value = metadata?.get(key)[0];
  return typeof value === "string" ? value : value?.toString("utf8");
}

/** The leader address an answer names ("host:port"), if any. */
export function leaderOf(metadata: Metadata | undefined): string | undefined {
  return header(metadata, LEADER_HEADER) || undefined;
}

/** The wait (ms) a node that refused a call for load asked for (0 if none). */
export function pushback(metadata: Metadata | undefined): number {
  const ms = Number.parseInt(header(metadata, PUSHBACK_HEADER) ?? "", 10);
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_PUSHBACK) : 0;
}

export interface Backoff {
  /** The first retry's cap, in ms. */
  readonly base: number;
  /** The longest wait, in ms. */
  readonly max: number;
}

/** Milliseconds before the next try after `tries` failed ones: exponential, capped, full jitter. */
export function backoff(b: Backoff, tries: number): number {
  return Math.random() * Math.min(b.max, b.base * 2 ** Math.min(tries, 16));
}
