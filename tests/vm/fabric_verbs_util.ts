/**
 * Shared pieces of the verbs fabric VM tests: a server with a test service on rxe1
 * (10.77.0.2), a client bound to rxe0 (10.77.0.1) so traffic crosses the veth pair, payloads
 * that are easy to check byte by byte, and the kernel's RDMA resource counts.
 * @module
 */
import { execFileSync } from "node:child_process";
import { type Client, type ClientOptions, connect } from "../../rpc/client/client.ts";
import { serve, type Server } from "../../rpc/server/server.ts";

/** Server and client addresses inside the Soft-RoCE VM. */
export const SERVER_ADDR = "10.77.0.2", CLIENT_ADDR = "10.77.0.1";

/** A small region: quick to register, big enough for every path. */
export const SMALL_REGION = {
  slots: 32,
  slotSize: 8192,
  bulkSize: 1 << 20,
  objectSlabs: 8,
  objectSlabSize: 128 << 10,
  stagingSize: 2 << 20,
} as const;

/** Test service: `t.Verbs/Echo` (request and attachment back), `Big` (N bytes, N = u32 of the request). */
export const TEST_SERVICES = {
  "t.Verbs": {
    Echo(
      request: Uint8Array,
      ctx: { requestAttachment?: Uint8Array; responseAttachment?: Uint8Array },
    ) {
      if (ctx.requestAttachment?.length) ctx.responseAttachment = ctx.requestAttachment;
      return request;
    },
    Big(request: Uint8Array) {
      const n = new DataView(request.buffer, request.byteOffset, 4).getUint32(0, true);
      return pattern(n, request[4] ?? 0);
    },
  },
};

/** `n` bytes of a pattern seeded by `seed`. */
export function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
}

/** The request of `Big` asking for `n` bytes. */
export function bigRequest(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(5);
  new DataView(b.buffer).setUint32(0, n, true);
  b[4] = seed;
  return b;
}

/** Log lines a server produced. */
export interface Logged {
  warn: string[];
  info: string[];
}

/** A server on rxe1 offering verbs (provider options merged over `{ addr: SERVER_ADDR }`). */
export async function verbsServer(
  verbs: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<{ server: Server; log: Logged }> {
  const log: Logged = { warn: [], info: [] };
  const server = await serve({
    port: 0,
    host: SERVER_ADDR,
    services: TEST_SERVICES,
    fabric: {
      fabrics: ["verbs"],
      providerOptions: { verbs: { addr: SERVER_ADDR, port: 0, ...verbs } },
      region: SMALL_REGION,
      ...extra,
    },
    logger: { warn: (m: string) => log.warn.push(m), info: (m: string) => log.info.push(m) },
  });
  return { server, log };
}

/** A client bound to rxe0 using verbs (provider options merged over `{ sourceAddr: CLIENT_ADDR }`). */
export function verbsClient(
  port: number,
  verbs: Record<string, unknown> = {},
  extra: ClientOptions = {},
): Promise<Client> {
  return connect({ host: SERVER_ADDR, port }, {
    fabric: "verbs",
    region: SMALL_REGION,
    providerOptions: { verbs: { sourceAddr: CLIENT_ADDR, ...verbs } },
    logger: { warn: () => {} },
    ...extra,
  });
}

/** `rdma resource show` as `{ "rxe0.qp": 1, ... }`. */
export function kernelResourceCounts(): Record<string, number> {
  const out = execFileSync("rdma", ["resource", "show"], { encoding: "utf8" });
  const counts: Record<string, number> = {};
  for (const line of out.trim().split("\n")) {
    const dev = line.split(":")[1]?.trim();
    const re = /(\w+) (\d+)/g;
    let m;
    while ((m = re.exec(line.split(":").slice(2).join(":")))) {
      counts[`${dev}.${m[1]}`] = Number(m[2]);
    }
  }
  return counts;
}

/** Waits until `fn()` is true (polling every 20 ms) or `ms` passed; returns the last value. */
export async function eventually(fn: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}
