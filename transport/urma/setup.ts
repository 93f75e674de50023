/**
 * Control path of the URMA fabric for one session side: open the context and queues
 * ({@link UrmaPort}: before the region size is known, so the client can put its jetty in the
 * hello), register the region (+ fabric page) and the aux area and build the
 * {@link UrmaEndpoint}, import the peer (segment BEFORE jetty, as the real stack requires), and
 * the proof message of the handshake. Everything here may allocate and throw; every failure
 * closes what it created.
 *
 * Proof (client → server, a SEND_IMM with {@link PROOF_IMM}, 64 bytes):
 * ```
 *   0 nonce[16]   the server's nonce from the offer
 *  16 seg[48]     the client's region segment (urma_seg_t) for the server to import
 * ```
 * Only a process that imported the offered jetty with the right token can deliver it, and it
 * tells the server which segment to write responses into.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { URMA_SEG, URMA_UBVA } from "../../ffi/layouts/urma.ts";
import { URMA_ACCESS, URMA_TM } from "../../ffi/symbols/liburma.ts";
import { UrmaContext } from "./context.ts";
import {
  AUX_BOUNCE,
  FABRIC_PAGE,
  JFC_DEPTH,
  PROOF_BYTES,
  RECV_DEPTH,
  SGE_PER_WR,
  SQ_DEPTH,
  UrmaEndpoint,
} from "./endpoint.ts";
import { crStatusName } from "./errors.ts";
import type { Jfc, Jfce } from "./jfc.ts";
import type { Jetty, RemoteJetty } from "./jetty.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Where a jetty is, as JSON (eid as 32 hex digits). */
export interface JettyAddress {
  eid: string;
  uasid: number;
  id: number;
}

/** How to open a port. */
export interface UrmaPortOptions {
  device?: string;
  eidIndex?: number;
  mode: "RM" | "RC";
}

/** Lower-case hex of bytes. */
export function toHex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

/** Bytes of (validated) hex. */
export function fromHex(h: string): Uint8Array {
  const b = new Uint8Array(h.length >> 1);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return b;
}

/** A random u32 other than 0. */
function randomToken(): number {
  const t = crypto.getRandomValues(new Uint32Array(1))[0];
  return t === 0 ? 1 : t;
}

/** The context, JFCE, JFC, JFR and jetty of one side; owned by the endpoint once one is built. */
export class UrmaPort {
  /** The token of this side's jetty and region segment. */
  readonly token: number;
  #handed = false;

  private constructor(
    readonly lib: UrmaLib,
    readonly ctx: UrmaContext,
    readonly jfce: Jfce,
    readonly jfc: Jfc,
    readonly jetty: Jetty,
    readonly mode: "RM" | "RC",
    token: number,
  ) {
    this.token = token;
  }

  /** Opens the device and creates the queues (depths clamped to the device's limits). */
  static open(u: UrmaLib, o: UrmaPortOptions): UrmaPort {
    const ctx = UrmaContext.open(u, o.device, o.eidIndex ?? 0);
    try {
      const cap = ctx.query();
      const need = (have: number, want: number, what: string) => {
        if (have < want) {
          throw new VerbusError(
            "NO_DEVICE",
            `${ctx.deviceName}: ${what} is ${have}, verbus needs ${want}`,
          );
        }
      };
      need(cap.maxJfcDepth, JFC_DEPTH, "max_jfc_depth");
      need(cap.maxJfsDepth, SQ_DEPTH, "max_jfs_depth");
      need(cap.maxJfrDepth, RECV_DEPTH, "max_jfr_depth");
      need(cap.maxSge, SGE_PER_WR, "max_jfs_sge");
      const token = randomToken();
      const transMode = o.mode === "RC" ? URMA_TM.RC : URMA_TM.RM;
      const jfce = ctx.createJfce();
      const jfc = ctx.createJfc(JFC_DEPTH, jfce);
      const jfr = ctx.createJfr(jfc, { depth: RECV_DEPTH, token, transMode });
      const jetty = ctx.createJetty(jfc, jfr, { depth: SQ_DEPTH, maxSge: SGE_PER_WR, transMode });
      return new UrmaPort(u, ctx, jfce, jfc, jetty, o.mode, token);
    } catch (e) {
      ctx.close();
      throw e;
    }
  }

  /** This side's jetty as the peer imports it. */
  get address(): JettyAddress {
    const a = this.jetty.address;
    return { eid: toHex(a.eid), uasid: a.uasid, id: a.id };
  }

  /**
   * Registers the region (+ fabric page) and the aux area and builds the endpoint, which owns
   * the context from then on (one call per port).
   */
  endpoint(regionSize: number, remoteSize: number, bounceBytes: number): UrmaEndpoint {
    if (this.#handed) throw new Error("UrmaPort.endpoint() called twice");
    this.#handed = true;
    try {
      const mem = new Uint8Array(regionSize + FABRIC_PAGE);
      const regionSeg = this.ctx.registerSegment(mem, { token: this.token });
      const aux = new Uint8Array(AUX_BOUNCE + bounceBytes);
      const auxSeg = this.ctx.registerSegment(aux, {
        token: randomToken(),
        access: URMA_ACCESS.LOCAL_ONLY,
      });
      return new UrmaEndpoint({
        lib: this.lib,
        ctx: this.ctx,
        jfce: this.jfce,
        jfc: this.jfc,
        jetty: this.jetty,
        mem,
        regionSize,
        regionSeg,
        aux,
        auxSeg,
        remoteSize,
        rc: this.mode === "RC",
      });
    } catch (e) {
      this.ctx.close();
      throw e;
    }
  }

  /** Releases everything (when no endpoint took the port over). Safe twice. */
  close(): void {
    if (!this.#handed) this.ctx.close();
    this.#handed = true;
  }
}

/** Bounce ring for layouts whose inline writes are up to `slotSize` bytes: 4 slots, 256 KiB – 8 MiB. */
export function bounceBytesFor(slotSize: number): number {
  const want = Math.min(8 << 20, Math.max(256 << 10, 4 * slotSize));
  return Math.ceil(want / 4096) * 4096;
}

/**
 * Checks a peer's `urma_seg_t` before importing it: it must cover exactly `expectedLen` bytes
 * (its region plus the fabric page) and name the EID of the peer's jetty.
 */
export function checkSegment(
  desc: Uint8Array,
  expectedLen: number,
  eid: Uint8Array,
  who: string,
): void {
  if (desc.length !== URMA_SEG.$size) {
    throw new VerbusError(
      "HANDSHAKE",
      `${who} segment: ${desc.length} bytes, expected ${URMA_SEG.$size}`,
    );
  }
  const d = new DataView(desc.buffer, desc.byteOffset, desc.byteLength);
  const len = d.getBigUint64(URMA_SEG.len, true),
    va = d.getBigUint64(URMA_SEG.ubva + URMA_UBVA.va, true);
  if (len !== BigInt(expectedLen)) {
    throw new VerbusError(
      "HANDSHAKE",
      `${who} segment covers ${len} bytes, the negotiated region needs exactly ${expectedLen}`,
    );
  }
  if (va === 0n || va + len > 1n << 53n) {
    throw new VerbusError(
      "HANDSHAKE",
      `${who} segment address 0x${va.toString(16)} is not a user address`,
    );
  }
  const segEid = desc.subarray(URMA_SEG.ubva + URMA_UBVA.eid, URMA_SEG.ubva + URMA_UBVA.eid + 16);
  if (toHex(segEid) !== toHex(eid)) {
    throw new VerbusError(
      "HANDSHAKE",
      `${who} segment is on EID ${toHex(segEid)}, its jetty on ${toHex(eid)}`,
    );
  }
}

/**
 * Imports the peer into `ep`: its segment first, then its jetty (bound in RC mode). Throws
 * HANDSHAKE naming the URMA status on failure (the caller closes the endpoint).
 */
export function connectPeer(
  ep: UrmaEndpoint,
  desc: Uint8Array,
  jetty: JettyAddress,
  token: number,
  mode: "RM" | "RC",
): void {
  const ctx = ep.parts.ctx;
  const remote: RemoteJetty = {
    eid: fromHex(jetty.eid),
    uasid: jetty.uasid,
    id: jetty.id,
    transMode: mode === "RC" ? URMA_TM.RC : URMA_TM.RM,
  };
  try {
    const seg = ctx.importSegment(desc, token);
    const tj = ctx.importJetty(remote, token);
    if (mode === "RC") ep.parts.jetty.bind(tj);
    ep.attachPeer(seg, tj);
  } catch (e) {
    throw new VerbusError(
      "HANDSHAKE",
      `cannot import the peer's segment / jetty: ${(e as Error).message}`,
    );
  }
}

/** Client: sends the proof (nonce + its segment) and checks its completion. */
export function sendProof(ep: UrmaEndpoint, nonce: Uint8Array): void {
  const msg = new Uint8Array(PROOF_BYTES);
  msg.set(nonce.subarray(0, 16), 0);
  msg.set(ep.parts.regionSeg.descriptor, 16);
  const st = ep.sendProof(msg);
  if (st !== 0) {
    const why = st > 0 ? crStatusName(st) : ep.failureReason ?? "not posted";
    throw new VerbusError("HANDSHAKE", `the proof SEND to the server's jetty failed: ${why}`);
  }
}

/**
 * Server: waits (up to `ms`) for the client's proof, checks the sender, the nonce and the
 * segment, then imports the client. Resolves false (with why) when anything disagrees.
 */
export async function acceptProof(
  ep: UrmaEndpoint,
  expect: {
    nonce: Uint8Array;
    jetty: JettyAddress;
    token: number;
    mode: "RM" | "RC";
    clientSize: number;
  },
  ms: number,
): Promise<{ ok: true } | { ok: false; why: string }> {
  const end = Date.now() + ms;
  let proof = ep.takeProof();
  while (proof === null && Date.now() < end && !ep.failed) {
    await new Promise((r) => setTimeout(r, 2));
    proof = ep.takeProof();
  }
  if (proof === null) return { ok: false, why: ep.failureReason ?? "no proof SEND arrived" };
  if (proof.uasid !== expect.jetty.uasid || proof.id !== expect.jetty.id) {
    return {
      ok: false,
      why:
        `the proof came from jetty ${proof.uasid}/${proof.id}, not the client's ${expect.jetty.uasid}/${expect.jetty.id}`,
    };
  }
  if (proof.length !== PROOF_BYTES || toHex(proof.bytes.subarray(0, 16)) !== toHex(expect.nonce)) {
    return { ok: false, why: "the proof does not carry the offered nonce" };
  }
  try {
    const desc = proof.bytes.slice(16, 16 + URMA_SEG.$size);
    checkSegment(desc, expect.clientSize + FABRIC_PAGE, fromHex(expect.jetty.eid), "client");
    connectPeer(ep, desc, expect.jetty, expect.token, expect.mode);
  } catch (e) {
    return { ok: false, why: (e as Error).message };
  }
  return { ok: true };
}
