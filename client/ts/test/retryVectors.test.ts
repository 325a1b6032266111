/**
 * The shared retry vectors (proto/vectors/retry.json): the client's one
 * retry rule (`decide` in src/retry.ts, asked by the call loop, the per-item
 * failures of Writes.Submit and Reads.Submit, and a watch) decides every
 * case as the contract says. Each status is made as grpc-js hands one over:
 * the code, the message, and a reason as a node sends it (a
 * google.rpc.Status holding the ErrorDetail, in the status details trailer),
 * or no details at all.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { status as Code, Metadata, type ServiceError } from "@grpc/grpc-js";
import { type Status, statusOf, statusOfFailure } from "../src/errors.js";
import { Status as RpcStatus } from "../src/gen/google/rpc/status.js";
import { ErrorDetail } from "../src/gen/handlestore/v1/common.js";
import { type Decision, decide, giveUp } from "../src/retry.js";
import { REPO } from "./vectors.js";

interface Case {
  readonly code: keyof typeof Code;
  readonly reason: string | null;
  readonly message: string;
  readonly call: "retry" | "give_up";
  readonly watch: "resume" | "give_up";
  readonly error_code?: keyof typeof Code;
}

const PATH = join(REPO, "proto", "vectors", "retry.json");
const { cases } = JSON.parse(readFileSync(PATH, "utf8")) as { cases: Case[] };

function name(c: Case, i: number): string {
  return `case ${i} (${c.code}, ${c.reason ?? "no reason"}, ${JSON.stringify(c.message)})`;
}

/** The case's google.rpc.Status as a node sends it, or nothing for a status without a reason. */
function details(c: Case): Buffer | undefined {
  if (c.reason === null) return undefined;
  const detail = ErrorDetail.encode(ErrorDetail.create({ reason: c.reason })).finish();
  const any = { typeUrl: "type.googleapis.com/handlestore.v1.ErrorDetail", value: Buffer.from(detail) };
  return Buffer.from(RpcStatus.encode({ code: Code[c.code], message: c.message, details: [any] }).finish());
}

/** A failed call as grpc-js hands it over. */
function callError(c: Case): ServiceError {
  const metadata = new Metadata();
  const raw = details(c);
  if (raw) metadata.set("grpc-status-details-bin", raw);
  const error = new Error(`${Code[c.code]} ${c.code}: ${c.message}`);
  return Object.assign(error, { code: Code[c.code], details: c.message, metadata }) as ServiceError;
}

/** A decision in the vectors' words. */
function verdict(d: Decision): [string, string] {
  return [d.retry ? "retry" : "give_up", d.resume ? "resume" : "give_up"];
}

/** How `s` differs from the case, if it does. */
function mismatch(c: Case, s: Status): string | undefined {
  const got = verdict(decide(s));
  if (got[0] !== c.call || got[1] !== c.watch) return `decided ${got.join("/")}, not ${c.call}/${c.watch}`;
  // Only the TLS cases name the error: the client's "TLS: ..." one; no other is taken for a TLS refusal.
  if (c.error_code === undefined) return decide(s).tlsRefused ? "taken for a TLS refusal" : undefined;
  const error = giveUp(s);
  if (error.code !== Code[c.error_code] || !error.message.startsWith("TLS: ")) {
    return `gives up with ${error.code}: ${error.message}, not ${c.error_code}: TLS: ...`;
  }
  return undefined;
}

function failures(statusOfCase: (c: Case) => Status): string[] {
  return cases.flatMap((c, i) => {
    const why = mismatch(c, statusOfCase(c));
    return why === undefined ? [] : [`${name(c, i)}: ${why}`];
  });
}

test("retry vectors: a failed call", () => {
  assert.ok(cases.length > 0, "no cases");
  assert.deepEqual(
    failures((c) => statusOf(callError(c))),
    [],
  );
});

test("retry vectors: a write's or read's failure inside a Submit answer", () => {
  const ofFailure = (c: Case) =>
    statusOfFailure({ code: Code[c.code], message: c.message, details: details(c) ?? Buffer.alloc(0) });
  assert.deepEqual(failures(ofFailure), []);
});
