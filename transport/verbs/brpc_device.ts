/**
 * Where brpc's RDMA connections of this process get their QPs: the device, port and GID picked
 * once per (options, local address) and kept, the device's verbs hub (`hub.ts`: the context, one
 * completion channel and one CQ for the process), and a pool of QPs prepared ahead (brpc's
 * `rdma_prepared_qp_cnt`): created on the hub's CQ with their PD and registered receive blocks and
 * send slots, so a handshake only brings one up. The pool is refilled once the handshake that took
 * one has ended (creating a QP and registering its memory holds the JS thread: not while a
 * handshake waits for its peer), one QP per macrotask.
 *
 * {@link prepareBrpcDevice} does all of that ahead (a server at `serve()`, a client before its
 * first connection): loads libibverbs, opens the device and its hub, searches the GID table and
 * fills the pool.
 *
 * Threading: one JS thread.
 * @module
 */
import { existsSync } from "node:fs";
import { setImmediate } from "node:timers";
import type { BrpcRdmaOptions } from "../brpc_rdma/options.ts";
import type { Context } from "./context.ts";
import { listDevices, openDevice } from "./device.ts";
import { VerbsHub } from "./hub.ts";
import { loadVerbs, NoRdmaError, type VerbsLib } from "./verbs_lib.ts";

/** A device port and GID picked for brpc connections. */
export interface BrpcDevicePick {
  readonly lib: VerbsLib;
  readonly hub: VerbsHub;
  readonly port: number;
  readonly gidIndex: number;
  readonly gid: Uint8Array;
  readonly lid: number;
  /**
   * A software device (Soft-RoCE `rxe`, `siw`): the RDMA transport runs in this host's kernel on
   * its CPUs (sysfs gives such devices a `parent` network interface; hardware devices have none).
   */
  readonly software: boolean;
}

/** Whether `name` is a software RDMA device (see {@link BrpcDevicePick.software}). */
export function isSoftwareDevice(name: string): boolean {
  return existsSync(`/sys/class/infiniband/${name}/parent`) || /^(rxe|siw)/.test(name);
}

/** What a pooled QP must match to be taken. */
export interface PreparedShape {
  readonly sqSize: number;
  readonly rqSize: number;
  readonly blockSize: number;
}

/** A QP the pool holds: closed when dropped. */
export interface Prepared {
  close(): void;
}

/** Contexts opened only to search GID tables (the hub opens its own for the QPs). */
const searchContexts = new Map<string, Context>();
const picks = new Map<string, BrpcDevicePick>();
interface Pool {
  readonly qps: Prepared[];
  /** Set while a refill is scheduled or running. */
  filling: boolean;
}
const pools = new Map<string, Pool>();

/** The IPv4-mapped GID of `ip` ("::ffff:a.b.c.d"), or null when `ip` is not IPv4. */
function ipv4Gid(ip: string): Uint8Array | null {
  const m = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (!m || m[1] === "0") return null;
  const g = new Uint8Array(16);
  g[10] = g[11] = 0xff;
  for (let i = 0; i < 4; i++) g[12 + i] = Number(m[i + 1]);
  return g;
}

const same = (a: Uint8Array, b: Uint8Array) => a.every((x, i) => x === b[i]);

/** The GID index of `gid` on `ctx`'s port, or -1. */
function findGid(ctx: Context, port: number, gid: Uint8Array): number {
  const n = ctx.queryPort(port).gidTblLen;
  for (let i = 0; i < n; i++) {
    try {
      if (same(ctx.queryGid(port, i), gid)) return i;
    } catch { /* empty entry */ }
  }
  return -1;
}

/** brpc's default GID: the last one whose interface id (bytes 8..15) is not zero. */
function lastGid(ctx: Context, port: number): number {
  for (let i = ctx.queryPort(port).gidTblLen - 1; i >= 0; i--) {
    try {
      if (ctx.queryGid(port, i).subarray(8).some((x) => x !== 0)) return i;
    } catch { /* empty entry */ }
  }
  throw new NoRdmaError(19, `${ctx.deviceName} port ${port} has no usable GID`);
}

function searchContext(v: VerbsLib, name: string): Context {
  let c = searchContexts.get(name);
  if (c === undefined) searchContexts.set(name, c = openDevice(v, name));
  return c;
}

/** The device name and GID index: the options, else the device holding the local IPv4 GID. */
function choose(v: VerbsLib, o: BrpcRdmaOptions, host: string): { name: string; gid: number } {
  const want = ipv4Gid(host);
  const names = o.device !== undefined ? [o.device] : listDevices(v).map((d) => d.name);
  if (names.length === 0) throw new NoRdmaError(19, "no RDMA devices");
  if (o.device === undefined && want !== null) {
    for (const name of names) {
      const i = findGid(searchContext(v, name), o.port, want);
      if (i >= 0) return { name, gid: o.gidIndex >= 0 ? o.gidIndex : i };
    }
  }
  if (o.gidIndex >= 0) return { name: names[0], gid: o.gidIndex };
  const ctx = searchContext(v, names[0]);
  const i = want === null ? -1 : findGid(ctx, o.port, want);
  return { name: names[0], gid: i >= 0 ? i : lastGid(ctx, o.port) };
}

/**
 * The device, port and GID for a brpc connection whose TCP side is bound to `host`, picked once
 * per (options, host) and kept for the process. Throws NoRdmaError (no device, port not ACTIVE).
 */
export async function pickBrpcDevice(o: BrpcRdmaOptions, host: string): Promise<BrpcDevicePick> {
  const key = `${o.device ?? ""}|${o.port}|${o.gidIndex}|${host}`;
  const have = picks.get(key);
  if (have !== undefined) return have;
  const lib = await loadVerbs();
  const { name, gid } = choose(lib, o, host);
  const hub = VerbsHub.forDevice(lib, name);
  const port = hub.ctx.queryPort(o.port);
  if (port.state !== "ACTIVE") {
    throw new NoRdmaError(100, `${hub.ctx.deviceName} port ${o.port} is ${port.state}, not ACTIVE`);
  }
  const pick: BrpcDevicePick = {
    lib,
    hub,
    port: o.port,
    gidIndex: gid,
    gid: hub.ctx.queryGid(o.port, gid),
    lid: port.lid,
    software: isSoftwareDevice(hub.ctx.deviceName),
  };
  picks.set(key, pick);
  return pick;
}

function poolKey(p: BrpcDevicePick, s: PreparedShape): string {
  return `${p.hub.ctx.deviceName}|${p.port}|${p.gidIndex}|${s.sqSize}|${s.rqSize}|${s.blockSize}`;
}

function poolOf(pick: BrpcDevicePick, shape: PreparedShape): Pool {
  const key = poolKey(pick, shape);
  let pool = pools.get(key);
  if (pool === undefined) pools.set(key, pool = { qps: [], filling: false });
  return pool;
}

/** Takes a prepared QP of `shape` on `pick`, or null when the pool is empty (see {@link refillPool}). */
export function takePrepared<T extends Prepared>(
  pick: BrpcDevicePick,
  shape: PreparedShape,
): T | null {
  return (poolOf(pick, shape).qps.shift() as T | undefined) ?? null;
}

/**
 * Refills the pool of `shape` on `pick` to `want` QPs made by `make`, from the next macrotask
 * on, one per macrotask. Call it when the handshake that took a QP has ended (creating a QP and
 * registering its memory holds the JS thread: not while a handshake waits for its peer).
 */
export function refillPool(
  pick: BrpcDevicePick,
  shape: PreparedShape,
  want: number,
  make: () => Prepared,
): void {
  const pool = poolOf(pick, shape);
  if (pool.filling || pool.qps.length >= want) return;
  pool.filling = true;
  setImmediate(() => void fill(pool, want, make));
}

/** Makes QPs until the pool holds `want` (one per macrotask); a failure ends it (the next take retries). */
async function fill(pool: Pool, want: number, make: () => Prepared): Promise<void> {
  pool.filling = true;
  try {
    while (pool.qps.length < want) {
      pool.qps.push(make());
      await new Promise((r) => setImmediate(r));
    }
  } catch {
    /* the next take tries again */
  } finally {
    pool.filling = false;
  }
}

/** QPs prepared and not taken yet, over all pools (tests, stats). */
export function preparedCount(): number {
  let n = 0;
  for (const p of pools.values()) n += p.qps.length;
  return n;
}

/**
 * Opens the device for `o` ahead of the first connection (libibverbs loaded, device context and
 * hub open, GID picked for `host`) and fills the pool with `o.preparedQps` QPs made by `make`.
 * Resolves once both are done; rejects with NoRdmaError when this host cannot open the device.
 */
export async function prepareBrpcDevice<T extends Prepared>(
  o: BrpcRdmaOptions,
  host: string,
  make: (pick: BrpcDevicePick) => T,
): Promise<BrpcDevicePick> {
  const pick = await pickBrpcDevice(o, host);
  const pool = poolOf(pick, { sqSize: o.sqSize, rqSize: o.rqSize, blockSize: o.blockSize });
  if (!pool.filling) await fill(pool, o.preparedQps, () => make(pick));
  return pick;
}
