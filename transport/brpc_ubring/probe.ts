/**
 * Whether this host can run brpc's UBRing mode, and (given an address) whether a brpc UBRing
 * server answers there, for `verbus doctor`: the first by creating, reserving and removing one
 * object of brpc's size in /dev/shm; the second by running the client handshake against the
 * address and closing the connection it made. Never throws; says why not.
 *
 * Control path. Threading: any JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { tcp } from "../tcp/mod.ts";
import { ubringClientHandshake } from "./handshake.ts";
import { ALLOC_UNIT } from "./layout.ts";
import { createOwnObject } from "./objects.ts";
import { brpcUbringOptionsSchema } from "./options.ts";
import { BrpcUbringConn } from "./stream_conn.ts";

/** The doctor's lines on brpc's UBRing mode. */
export interface BrpcUbringCapability {
  /** This host can make the shm objects. */
  usable: boolean;
  /** Why not, when not usable. */
  reason?: string;
  /** The peer asked about, when an address was given. */
  peer?: { address: string; reachable: boolean; detail: string };
}

const msg = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0];

/** `HOST:PORT` or `[V6]:PORT` as host and port; throws INVALID_ARGUMENT naming it. */
export function parseUbringAddress(text: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:\[\]]+):(\d+)$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) {
    throw new VerbusError("INVALID_ARGUMENT", `expected HOST:PORT, got ${JSON.stringify(text)}`);
  }
  return { host: m[1], port };
}

/** Judges this host, and the server at `address` (`HOST:PORT`, or host and port) when given. */
export async function brpcUbringCapability(
  address?: string | { host: string; port: number },
  timeoutMs = 3000,
): Promise<BrpcUbringCapability> {
  if (typeof address === "string") address = parseUbringAddress(address);
  const name = `UBRING_verbus_doctor_${
    (globalThis as { process?: { pid: number } }).process?.pid ?? 0
  }`;
  try {
    const o = await createOwnObject(name, ALLOC_UNIT);
    o.unlink();
    o.close();
  } catch (e) {
    return {
      usable: false,
      reason: `cannot make a ${ALLOC_UNIT >> 20} MiB object in /dev/shm: ${msg(e)}`,
    };
  }
  if (address === undefined) return { usable: true };
  return { usable: true, peer: await probePeer(address, timeoutMs) };
}

async function probePeer(a: { host: string; port: number }, timeoutMs: number) {
  const address = `${a.host}:${a.port}`;
  let conn;
  try {
    conn = await tcp.connect({ host: a.host, port: a.port, timeoutMs });
  } catch (e) {
    return { address, reachable: false, detail: msg(e) };
  }
  const out = await ubringClientHandshake(
    conn,
    brpcUbringOptionsSchema.parse({ handshakeTimeoutMs: timeoutMs }),
  );
  out.conn?.close();
  if (out.conn instanceof BrpcUbringConn) {
    const r = out.conn.rings;
    return {
      address,
      reachable: true,
      detail: `a UBRing server: rings of ${r.sendBlocks} blocks (its) and ${r.recvBlocks} (ours)`,
    };
  }
  const why = out.state === "FALLBACK_TCP"
    ? `it answers, but the connection stays on TCP: ${out.reason}`
    : out.notUbringServer
    ? `not a UBRing server: ${out.reason}`
    : `the handshake failed: ${out.reason}`;
  return { address, reachable: false, detail: why };
}
