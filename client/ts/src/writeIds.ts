/**
 * A client's exactly-once sequence, as the Rust and Python clients keep it:
 * a random 64-bit client id, and seq 1, 2, 3, ...; each write id also
 * names the lowest seq still in flight (`firstIncompleteSeq`), below which
 * the cluster may forget the answers it remembers. Every retry of a write
 * reuses its id, so the state machine answers a duplicate with the first
 * answer instead of applying it twice.
 */
import { randomBytes } from "node:crypto";
import type { WriteId } from "./gen/handlestore/v1/common.js";

const MAX_U64 = (1n << 64n) - 1n;

/** A client id in 1..2^64-2, as the Rust client draws it. */
function drawClientId(): bigint {
  for (;;) {
    const id = randomBytes(8).readBigUInt64BE();
    if (id !== 0n && id !== MAX_U64) return id;
  }
}

/** One write's id, held until the write is answered (or given up unsent). */
export class WriteTicket {
  private released = false;

  constructor(
    private readonly ids: WriteIds,
    readonly id: WriteId,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.ids.release(this.id.seq);
  }
}

export class WriteIds {
  readonly clientId = drawClientId();
  private nextSeq = 1n;
  // Seqs are added in increasing order, so the first one is the lowest.
  private readonly inFlight = new Set<bigint>();

  ticket(): WriteTicket {
    const seq = this.nextSeq++;
    this.inFlight.add(seq);
    const first = this.inFlight.values().next().value ?? seq;
    return new WriteTicket(this, { clientId: this.clientId, seq, firstIncompleteSeq: first });
  }

  release(seq: bigint): void {
    this.inFlight.delete(seq);
  }
}
