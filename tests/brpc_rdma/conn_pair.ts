/**
 * Test fixture: two {@link BrpcRdmaConn}s wired to each other over in-memory QPs (`fake_qp.ts`),
 * without a handshake (each QP brought up from the other's hello, as the handshake does), each on
 * a stub TCP connection; and a receiver that parses baidu_std frames from lent chunks, as the
 * channel and server do, checking each frame's bytes.
 */
import { encodeFrameTo, FrameParser } from "../../rpc/protocol/frame.ts";
import { helloFor } from "../../transport/brpc_rdma/hello.ts";
import { brpcRdmaOptionsSchema } from "../../transport/brpc_rdma/options.ts";
import { sendBytesFor } from "../../transport/brpc_rdma/send_ring.ts";
import { BrpcRdmaConn } from "../../transport/brpc_rdma/stream_conn.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { FakeQp } from "./fake_qp.ts";

/** A TCP connection that carries nothing (the RDMA connection only watches it for a close). */
function stubTcp(port: number): TcpConn {
  const addr = { host: "127.0.0.1", port };
  return {
    remoteAddress: addr,
    localAddress: addr,
    closed: false,
    onData() {},
    onClose() {},
    close() {},
  } as unknown as TcpConn;
}

/** Two connected brpc RDMA connections and their QPs. */
export interface ConnPair {
  a: BrpcRdmaConn;
  b: BrpcRdmaConn;
  qa: FakeQp;
  qb: FakeQp;
  close(): void;
}

/** Connections on QPs of `sq`/`rq`/`block` (both sides alike); `late`: sends are read late. */
export function connPair(
  o: { sqSize?: number; rqSize?: number; blockSize?: number },
  late = false,
): ConnPair {
  const opts = brpcRdmaOptionsSchema.parse({ sqSize: 16, rqSize: 16, blockSize: 4096, ...o });
  const qa = new FakeQp(opts), qb = new FakeQp(opts);
  qa.lateSends = qb.lateSends = late;
  const ha = helloFor(qa), hb = helloFor(qb);
  qa.bringUp(hb, sendBytesFor(qa, hb));
  qb.bringUp(ha, sendBytesFor(qb, ha));
  const a = new BrpcRdmaConn(stubTcp(1), qa, hb);
  const b = new BrpcRdmaConn(stubTcp(2), qb, ha);
  return {
    a,
    b,
    qa,
    qb,
    close() {
      a.close();
      b.close();
    },
  };
}

/** The payload of frame `i`: `n` bytes of a pattern of `i`. */
export function payloadOf(i: number, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let k = 0; k < n; k++) b[k] = (k * 31 + i * 7 + 1) & 0xff;
  return b;
}

/** Encodes frame `i` (correlation id `i`, payload {@link payloadOf}) into `conn`'s output. */
export function sendFrame(conn: TcpConn, i: number, n: number): number {
  const p = payloadOf(i, n);
  encodeFrameTo(conn, { correlationId: i }, p);
  return p.length;
}

/** Receives frames on `conn` through a lending handler; checks their order and bytes. */
export class FrameReceiver {
  readonly parser: FrameParser;
  /** Frames received, in order; payloads kept (to find any that changed later). */
  readonly payloads: Uint8Array[] = [];
  frames = 0;
  bad: string[] = [];

  /** `sizeOf(i)`: the payload size frame `i` was sent with. */
  constructor(conn: TcpConn, sizeOf: (i: number) => number, lending = true, keep = false) {
    this.parser = new FrameParser((meta, payload) => {
      const i = Number(meta.correlationId);
      if (i !== this.frames) this.bad.push(`frame ${this.frames} came as ${i}`);
      if (payload.length !== sizeOf(i) || !samePattern(payload, i)) {
        this.bad.push(`frame ${i}: ${payload.length} bytes, not the ${sizeOf(i)} sent`);
      }
      if (keep) this.payloads.push(payload);
      this.frames++;
    });
    const push = (chunk: Uint8Array, lent: boolean) => {
      try {
        this.parser.push(chunk, lent);
      } catch (e) {
        this.bad.push(String(e));
      }
    };
    if (lending) conn.onDataLent(push);
    else conn.onData((chunk) => push(chunk, false));
  }

  /** Checks every kept payload again (a view of reused memory would have changed). */
  recheck(): void {
    this.payloads.forEach((p, i) => {
      if (!samePattern(p, i)) this.bad.push(`frame ${i}: changed after delivery`);
    });
  }
}

function samePattern(p: Uint8Array, i: number): boolean {
  for (let k = 0; k < p.length; k++) if (p[k] !== ((k * 31 + i * 7 + 1) & 0xff)) return false;
  return true;
}

/**
 * Waits until `cond` holds (polling every 2 ms), failing after `ms` — or at once when `r` saw a
 * bad frame.
 */
export async function until(cond: () => boolean, ms = 5000, r?: FrameReceiver): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (r !== undefined && r.bad.length > 0) throw new Error(`bad frames: ${r.bad.slice(0, 3)}`);
    if (Date.now() - t0 > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}
