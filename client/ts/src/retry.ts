/**
 * When a call is tried again, where, and after how long. Whether it is, and
 * whether a watch resumes, follows one rule (proto/vectors/retry.json's
 * "rule"): `decide`, asked by the call loop, the per-item failures of
 * Writes.Submit and Reads.Submit, and a watch, opening or established.
 */
import { status as Code, type Metadata } from "@grpc/grpc-js";
import type { HandlestoreError } from "./errorBase.js";
import { errorOf, type Status } from "./errors.js";
import { isReason, REASONS, UnauthenticatedError } from "./gen/reasons.js";
import { LEADER_HEADER, MAX_PUSHBACK_MS, PUSHBACK_HEADER, TLS_REFUSED_MARKERS } from "./gen/wire.js";

// Kept here, where they were defined before src/gen/wire.ts.
export { LEADER_HEADER, PUSHBACK_HEADER };

/** Codes that say the attempt, not the request, failed: worth another node. */
const RETRYABLE = new Set<Code>([Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.CANCELLED]);
/** Without a reason these are a broken stream, not a node's verdict (a node puts a reason on every status it makes). */
const BROKEN_STREAM = new Set<Code>([Code.UNKNOWN, Code.INTERNAL]);

/** What the client does after one failure. */
export interface Decision {
  /** A call is tried again, on another node after a backoff. */
  readonly retry: boolean;
  /** A watch resumes from its position. */
  readonly resume: boolean;
  /** TLS refused the connection: the caller gets UNAUTHENTICATED "TLS: ...". */
  readonly tlsRefused: boolean;
}

const GIVE_UP: Decision = { retry: false, resume: false, tlsRefused: false };
const RETRY: Decision = { retry: true, resume: true, tlsRefused: false };

/**
 * The rule: a reason this build knows decides, whatever the message (a node
 * may quote a peer's TLS error); an unknown one (a newer node's) leaves it
 * to the code; without a reason, a TLS refusal marker in the message gives
 * up, else the code decides.
 */
export function decide(s: Status): Decision {
  const reason = s.detail.reason;
  if (isReason(reason)) {
    const retried = REASONS[reason].retried;
    return { retry: retried === "yes", resume: retried !== "no", tlsRefused: false };
  }
  if (reason) return RETRYABLE.has(s.code) ? RETRY : GIVE_UP;
  if (tlsRefused(s.message)) return { ...GIVE_UP, tlsRefused: true };
  return RETRYABLE.has(s.code) || BROKEN_STREAM.has(s.code) ? RETRY : GIVE_UP;
}

/**
 * The message of a status without a reason says TLS refused the connection
 * (a certificate rejected, a TLS alert, TLS spoken to a plain port): it
 * would fail again on every node. The markers name a judgement, never a
 * mere mention of TLS (a host name) or a handshake that broke off, which
 * heals.
 */
function tlsRefused(message: string): boolean {
  const text = message.toLowerCase();
  return TLS_REFUSED_MARKERS.some((marker) => text.includes(marker));
}

/**
 * The error the caller gets when the client gives up on `s`: a TLS refusal
 * is UNAUTHENTICATED "TLS: ...", prefixed by `where` (a node's address and
 * ": "); any other is the status's own error.
 */
export function giveUp(s: Status, where = ""): HandlestoreError {
  if (decide(s).tlsRefused) return new UnauthenticatedError(`${where}TLS: ${s.message}`, { code: s.code });
  return errorOf(s);
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
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, MAX_PUSHBACK_MS) : 0;
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
