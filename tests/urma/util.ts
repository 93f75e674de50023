/**
 * Shared pieces of the URMA suites: where the simulated liburma is, and one "side" of a
 * connection (context, JFCE, JFC, JFR, jetty, registered segment) built on it.
 * @module
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { URMA_TM } from "../../ffi/symbols/liburma.ts";
import { UrmaContext } from "../../transport/urma/context.ts";
import { UrmaHub } from "../../transport/urma/hub.ts";
import type { RuntimeName } from "../../ffi/runtime.ts";
import { runtimeBinary } from "../util/proc.ts";
import { CrReader } from "../../transport/urma/data_path.ts";
import type { Jfc, Jfce } from "../../transport/urma/jfc.ts";
import type { Jetty, Jfr } from "../../transport/urma/jetty.ts";
import type { Segment } from "../../transport/urma/segment.ts";
import { loadUrma, type UrmaLib } from "../../transport/urma/urma_lib.ts";
import { SIM_ABI, simPathFor } from "./sim_path.ts";

/**
 * The simulated liburma of this run's ABI ({@link SIM_ABI}): build/urma_sim/liburma.so.0 for
 * 25.12, build/urma_sim/<abi>/liburma.so.0 otherwise (`make -C c-helpers/urma_sim`).
 */
export const SIM_PATH = simPathFor(SIM_ABI);
/** build/urma_sim/abi_check (the default ABI's header table printer). */
export const ABI_CHECK_PATH = fileURLToPath(
  new URL("../../build/urma_sim/abi_check", import.meta.url),
);
export { SIM_ABI, simDirFor, simPathFor } from "./sim_path.ts";
/** A skip reason when the simulator is not built, else false. */
export const SKIP_NO_SIM: string | false = existsSync(SIM_PATH)
  ? false
  : `the simulated liburma is not built (${SIM_PATH} missing: run make)`;

/**
 * Simulator objects of this process that sessions hold: every live object minus what the
 * process's URMA hubs keep for themselves (context, JFCE, JFCs, wake jetty, pool).
 */
export function sessionObjects(u: UrmaLib): number {
  return u.liveObjects()!.total - UrmaHub.heldObjects();
}

/**
 * Waits (up to 5 s) until this process's URMA sessions released their simulator objects, then
 * closes the process's hubs (they reopen on demand): for tests that need a fresh hub or none.
 */
export async function closeHubs(u: UrmaLib): Promise<void> {
  const end = Date.now() + 5000;
  while (sessionObjects(u) !== 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  for (const hub of UrmaHub.open) hub.close();
}

/** A skip reason for a test that runs a child of `runtime` on the simulator, else false. */
export function skipCross(runtime: RuntimeName): string | false {
  if (SKIP_NO_SIM) return SKIP_NO_SIM;
  try {
    return existsSync(runtimeBinary(runtime)) ? false : `no ${runtime} binary`;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Loads the simulator by explicit path. */
export function loadSim(): Promise<UrmaLib> {
  return loadUrma(SIM_PATH);
}

/** One endpoint's objects. `close()` closes the context (children first). */
export interface Side {
  ctx: UrmaContext;
  jfce: Jfce;
  jfc: Jfc;
  jfr: Jfr;
  jetty: Jetty;
  seg: Segment;
  buf: Uint8Array;
  cr: CrReader;
  token: number;
}

/** Builds a side with a `size`-byte registered buffer and jetty/segment token `token`. */
export function makeSide(
  u: UrmaLib,
  size: number,
  token: number,
  transMode: number = URMA_TM.RM,
): Side {
  const ctx = UrmaContext.open(u);
  const jfce = ctx.createJfce();
  const jfc = ctx.createJfc(256, jfce);
  const jfr = ctx.createJfr(jfc, { depth: 64, token, transMode });
  const jetty = ctx.createJetty(jfc, jfr, { depth: 64, transMode });
  const buf = new Uint8Array(size);
  const seg = ctx.registerSegment(buf, { token });
  return { ctx, jfce, jfc, jfr, jetty, seg, buf, cr: new CrReader(32), token };
}

/** Polls `side.jfc` until a poll returns completions (or ~`ms` ms pass); returns that count. */
export async function pollSome(side: Side, into: CrReader = side.cr, ms = 3000): Promise<number> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const k = side.jfc.poll(into);
    if (k > 0) return k;
    await new Promise((r) => setTimeout(r, 1));
  }
  return 0;
}

/** Hex codecs (the one in util/hex.ts). */
export { fromHex, toHex } from "../../util/hex.ts";

/** 32-bit FNV-1a of bytes. */
export function fnv(b: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const x of b) h = Math.imul(h ^ x, 0x01000193) >>> 0;
  return h;
}

/** Fills `b` with a pattern derived from `seed`. */
export function pattern(b: Uint8Array, seed: number): Uint8Array {
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}
