/**
 * {@link TimedReader}: a {@link RawReader} with a deadline, for handshakes that run on a fresh
 * TCP connection before any framed byte (brpc's RDMA and UBRing hellos).
 *
 * Threading: the connection's JS thread.
 * @module
 */
import { RawReader } from "./raw_reader.ts";
import type { TcpConn } from "./tcp.ts";

/** The first line of `e`'s message (or of `e` as text): what a handshake's log line says. */
export const errorLine = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e)).split("\n")[0];

/** Reads with a deadline: past it the TCP connection is closed (the read then rejects). */
export class TimedReader {
  readonly reader: RawReader;
  #timedOut = false;
  constructor(readonly tcp: TcpConn, public deadline: number) {
    this.reader = new RawReader(tcp);
  }
  /** Whether the last failed read failed by the deadline (not by the peer closing). */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  async read(n: number, what: string): Promise<Uint8Array> {
    const left = Math.max(1, this.deadline - Date.now());
    const timer = this.deadline === Infinity ? undefined : setTimeout(() => {
      this.#timedOut = true;
      this.tcp.close();
    }, left);
    try {
      return await this.reader.read(n);
    } catch (e) {
      throw new Error(
        this.#timedOut ? `no ${what} within the handshake timeout` : `${what}: ${errorLine(e)}`,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
