/**
 * The shared error-details vectors (proto/vectors/error_details.json): a
 * call's `grpc-status-details-bin` trailer and a write's failure inside a
 * Submit answer keep the node's detail in both forms (a google.rpc.Status
 * holding it as an Any, and the bare ErrorDetail of the previous release),
 * and find none in the rest.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { type status as Code, Metadata, type ServiceError } from "@grpc/grpc-js";
import { errorOf, type Status, statusOf, statusOfFailure } from "../src/errors.js";
import { REPO } from "./vectors.js";

interface Case {
  readonly name: string;
  readonly code: number;
  readonly message: string;
  readonly details: string;
  readonly expect: {
    reason: string;
    leader_id: number;
    leader_addr: string;
    current_revision: number;
    compact_revision: number;
  } | null;
}

const PATH = join(REPO, "proto", "vectors", "error_details.json");
const { cases } = JSON.parse(readFileSync(PATH, "utf8")) as { cases: Case[] };

function callError(c: Case): ServiceError {
  const metadata = new Metadata();
  if (c.details) metadata.set("grpc-status-details-bin", Buffer.from(c.details, "hex"));
  return Object.assign(new Error(c.message), { code: c.code as Code, details: c.message, metadata }) as ServiceError;
}

function holds(s: Status, c: Case, path: string): void {
  const want = c.expect ?? { reason: "", leader_id: 0, leader_addr: "", current_revision: 0, compact_revision: 0 };
  const d = s.detail;
  assert.deepEqual(
    [d.reason, d.leaderId, d.leaderAddr, d.currentRevision, d.compactRevision],
    [
      want.reason,
      BigInt(want.leader_id),
      want.leader_addr,
      BigInt(want.current_revision),
      BigInt(want.compact_revision),
    ],
    `${c.name} (${path})`,
  );
  const err = errorOf(s);
  assert.equal(err.code, c.code, c.name);
  assert.equal(err.message, c.message, c.name);
}

test("the error-details vectors cover every form", () => {
  assert.deepEqual(new Set(cases.map((c) => c.name.split(":")[0])), new Set(["new", "old", "none"]));
});

for (const c of cases) {
  test(`error details: ${c.name}`, () => {
    holds(statusOf(callError(c)), c, "a call's trailer");
    const failure = { code: c.code, message: c.message, details: Buffer.from(c.details, "hex") };
    holds(statusOfFailure(failure), c, "a write's failure");
  });
}
