/**
 * A real node's errors arrive with their reason through the google.rpc.Status
 * every gRPC library expects in `grpc-status-details-bin` (decoded here with
 * the generated google.rpc.Status, not the client's reader), and in a write's
 * failure inside a Writes.Submit answer; the client keeps the reason.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { credentials, type Metadata, type ServiceError } from "@grpc/grpc-js";
import { Status as RpcStatus } from "../src/gen/google/rpc/status.js";
import { ErrorDetail } from "../src/gen/handlestore/v1/common.js";
import { GetRequest, HandlesClient, PutRequest } from "../src/gen/handlestore/v1/handles.js";
import { SubmitRequest, type SubmitResponse, WritesClient } from "../src/gen/handlestore/v1/writes.js";
import { newHandleId, RevisionMismatchError } from "../src/index.js";
import { skipReason, useCluster } from "./cluster.js";

/** The one ErrorDetail of the google.rpc.Status in `raw`, whose code and message must be `code` and `message`. */
function unpacked(raw: Uint8Array, code: number, message: string): ErrorDetail {
  const status = RpcStatus.decode(raw);
  assert.deepEqual([status.code, status.message], [code, message]);
  assert.equal(status.details.length, 1);
  const [any] = status.details;
  assert.equal(any?.typeUrl, "type.googleapis.com/handlestore.v1.ErrorDetail");
  return ErrorDetail.decode(any?.value ?? Buffer.alloc(0));
}

function trailerOf(e: ServiceError): Uint8Array {
  const [raw] = (e.metadata as Metadata).get("grpc-status-details-bin");
  assert.ok(raw instanceof Buffer, "a details trailer");
  return raw;
}

/** The error a unary call fails with. */
function failure<Req>(
  call: (req: Req, cb: (e: ServiceError | null) => void) => unknown,
  req: Req,
): Promise<ServiceError> {
  return new Promise((resolve, reject) => call(req, (e) => (e ? resolve(e) : reject(new Error("the call succeeded")))));
}

describe("a node's errors on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();

  test("a call's error and a write's failure carry a google.rpc.Status with the ErrorDetail", async () => {
    const client = fx.client({ namespace: "ts-errors" });
    const carts = client.handleStore<{ n: number }>("errs");
    const id = await carts.mint({ n: 1 });
    const rev = BigInt((await carts.getVersioned(id))?.modRevision ?? 0);
    const addr = fx.cluster.nodes[(await fx.cluster.waitLeader()) - 1]?.addr as string;
    const handles = new HandlesClient(addr, credentials.createInsecure());
    const writes = new WritesClient(addr, credentials.createInsecure());
    try {
      const stale = PutRequest.create({
        namespace: "ts-errors",
        store: "errs",
        id,
        value: Buffer.from("{}"),
        expectedRevision: rev + 1000n,
      });
      const lost = await failure(handles.put.bind(handles), stale);
      const detail = unpacked(trailerOf(lost), lost.code, lost.details);
      assert.deepEqual([detail.reason, detail.currentRevision], ["revision_mismatch", rev]);

      const missing = GetRequest.create({ namespace: "ts-errors", store: "errs", id: newHandleId() });
      const gone = await failure(handles.get.bind(handles), missing);
      assert.equal(unpacked(trailerOf(gone), gone.code, gone.details).reason, "not_found");

      const submit = SubmitRequest.create({ writes: [{ op: { $case: "put", value: stale } }] });
      const answer = await new Promise<SubmitResponse>((ok, no) =>
        writes.submit(submit, (e, r) => (e ? no(e) : ok(r))),
      );
      const f = answer.results[0]?.result;
      assert.equal(f?.$case, "failure");
      const { code, message, details } = f.value;
      const inSubmit = unpacked(details, code, message);
      assert.deepEqual([inSubmit.reason, inSubmit.currentRevision], ["revision_mismatch", rev]);
    } finally {
      handles.close();
      writes.close();
    }

    // The client keeps both (its puts go through Writes.Submit).
    await assert.rejects(carts.putWith(id, { n: 2 }, { expectedRevision: Number(rev) + 1000 }), (e: unknown) => {
      assert.ok(e instanceof RevisionMismatchError);
      assert.equal(e.currentRevision, Number(rev));
      return true;
    });
  });
});
