/**
 * Pull-based reading of a grpc-js server stream: `read(ms)` gives the next
 * message, "end" when the stream ended, or "silent" when nothing came in
 * time; a failed stream rejects with grpc-js's ServiceError. Pauses the
 * stream while unread messages pile up.
 */
import type { ClientReadableStream } from "@grpc/grpc-js";

/** Unread messages past which the stream is paused. */
const HIGH_WATER = 64;

export class StreamReader<T> {
  private readonly buffer: T[] = [];
  private ended = false;
  private failed: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly stream: ClientReadableStream<T>) {
    stream.on("data", (message: T) => {
      this.buffer.push(message);
      if (this.buffer.length >= HIGH_WATER) stream.pause();
      this.notify();
    });
    stream.on("end", () => {
      this.ended = true;
      this.notify();
    });
    stream.on("error", (e: Error) => {
      this.failed = e;
      this.notify();
    });
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async read(timeoutMs: number): Promise<T | "end" | "silent"> {
    if (this.buffer.length === 0 && !this.ended && !this.failed) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        timer = setTimeout(resolve, timeoutMs);
      });
      clearTimeout(timer);
      this.wake = undefined;
    }
    const message = this.buffer.shift();
    if (message !== undefined) {
      if (this.buffer.length < HIGH_WATER / 2 && this.stream.isPaused()) this.stream.resume();
      return message;
    }
    if (this.failed) throw this.failed;
    return this.ended ? "end" : "silent";
  }

  cancel(): void {
    this.stream.cancel();
  }
}
