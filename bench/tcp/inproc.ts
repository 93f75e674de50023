/**
 * CPU per call of verbus's TCP server framing in ONE process, without sockets: the JS a server does
 * per request (`ServerConnection`: parse, dispatch, the echo handler, encode into the output slab),
 * fed prebuilt chunks of `--inflight` request frames (as a channel writes them) through a fake
 * `TcpConn` that drops what is written and counts its writes. `--copy`: the handler copies its
 * request (`slice()`), as the demo Echo did.
 * Kernel, event loop and the other process are not in it: it isolates the per-call JS work, and
 * it is stable on a busy machine (one process, CPU time per call, not wall time).
 *
 *   deno run -A bench/tcp/inproc.ts [--inflight 32] [--calls 2000000] [--payload 64]
 *   bun bench/tcp/inproc.ts ...
 * Prints one JSON line: {"runtime":…, "server_ns_per_call":…, "writes_per_round":…}.
 * @module
 */
import { ConnBase } from "../../transport/tcp/conn_base.ts";
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import { ServerConnection } from "../../rpc/tcp/server_connection.ts";
import { Dispatcher } from "../../rpc/protocol/dispatch.ts";
import { encodeRequestFrameTo, RequestMetaCache } from "../../rpc/protocol/frame_fast.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const argv: string[] = g.Deno ? g.Deno.args : g.process.argv.slice(2);
const num = (name: string, def: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const INFLIGHT = num("inflight", 32), CALLS = num("calls", 2_000_000), PAYLOAD = num("payload", 64);

/** A connection whose writes vanish (counted); `feed` delivers a chunk as the socket would. */
class NullConn extends ConnBase {
  readonly remoteAddress: NetAddress = { host: "127.0.0.1", port: 1 };
  readonly localAddress: NetAddress = { host: "127.0.0.1", port: 2 };
  written = 0;
  writes = 0;
  protected flushNow(): void {
    while (this.hasQueued) {
      const slab = this.runSlab;
      if (slab !== null) {
        const n = this.pendingWriteBytes;
        this.wroteRun(n);
        this.written += n;
      } else {
        const b = this.takeQueued();
        this.wrote(b.length);
        this.written += b.length;
      }
      this.writes++;
    }
  }
  protected closeSocket(): void {}
  protected setSocketPaused(): void {}
  feed(chunk: Uint8Array): void {
    this.deliver(chunk);
  }
}

const req = new Uint8Array(PAYLOAD).fill(0x61);
// One chunk of INFLIGHT request frames, as a client of this build writes them.
const cache = new RequestMetaCache();
const sinkOf = () => {
  const buf = new Uint8Array(1 << 20);
  let used = 0;
  return {
    reserve: (_n: number) => used,
    get writeBuffer() {
      return buf;
    },
    commit: (n: number) => void (used += n),
    bytes: () => buf.subarray(0, used),
  };
};
const sink = sinkOf();
for (let i = 0; i < INFLIGHT; i++) {
  encodeRequestFrameTo(sink, cache.prefix("bench.Echo", "Echo", 30000), i + 1, req);
}
const requestChunk = sink.bytes().slice();

const dispatcher = new Dispatcher({
  "bench.Echo": {
    Echo: argv.includes("--copy") ? (r: Uint8Array) => r.slice() : (r: Uint8Array) => r,
  },
}, {
  warn: (m) => console.error(m),
});
const conn = new NullConn();
const host = {
  dispatcher,
  logger: { warn: (m: string) => console.error(m) },
  connectionClosed() {},
  protocolError(_c: unknown, e: Error) {
    throw e;
  },
  callRefused() {},
};
new ServerConnection(conn, host, {
  maxBodySize: 64 << 20,
  maxInflightPerConnection: 1 << 20,
  writeHighWaterMark: 1 << 30,
  writeLowWaterMark: 1 << 29,
  headerTimeoutMs: 0,
  idleTimeoutMs: 0,
  stallTimeoutMs: 0,
});

const { cpuUsage } = await import("node:process");
/** CPU time (user + system) of this process in ms: robust to a busy machine, unlike the wall. */
const cpuMs = () => {
  const u = cpuUsage();
  return (u.user + u.system) / 1000;
};

function server(rounds: number): number {
  const t0 = cpuMs();
  for (let r = 0; r < rounds; r++) conn.feed(requestChunk.slice());
  return cpuMs() - t0;
}

const rounds = Math.ceil(CALLS / INFLIGHT);
server(Math.ceil(rounds / 10)); // warm-up
const ms = server(rounds);
console.log(JSON.stringify({
  runtime: g.Bun ? "bun" : "deno",
  inflight: INFLIGHT,
  calls: rounds * INFLIGHT,
  server_ns_per_call: Math.round(ms * 1e6 / (rounds * INFLIGHT)),
  writes_per_round: conn.writes / (rounds + Math.ceil(rounds / 10)),
}));
