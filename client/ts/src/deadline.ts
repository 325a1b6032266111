/**
 * The client's own deadline: a call no node could serve in time. It is a
 * `DeadlineExceededError` (the error table's class of that code, which a
 * node's `slow_request` also is), so one `instanceof` catches both.
 */
import { DeadlineExceededError } from "./gen/reasons.js";

/** The call's overall deadline passed while retrying. A write's outcome is unknown. */
export class DeadlineError extends DeadlineExceededError {
  constructor(
    /** The deadline, in milliseconds. */
    readonly deadline: number,
    /** The last error seen, with the node it came from. */
    readonly last: string,
  ) {
    super(`deadline of ${deadline} ms exceeded; last error: ${last}`);
  }
}
