/**
 * What a liburma reveals about its struct sizes at run time, for the builds whose exported
 * symbols fit several named ABIs (those with `urma_get_seg_ctx`: 25.12, 26.06-ext, 26.06-ext56):
 * the lengths of its own descriptions. It registers a 4 KiB segment and makes a jetty on the
 * first device, asks `urma_get_seg_ctx` / `urma_get_rjetty` for them, frees everything, and
 * keeps the one candidate whose length rules (ffi/layouts/urma_abi.ts BlobRule, which start
 * from its sizeof) explain both lengths exactly. Control path, load time only.
 * @module
 */
import { urmaAbi, type UrmaAbiLayouts } from "../../ffi/layouts/urma_abi.ts";
import { UrmaContext } from "./context.ts";
import { blobLength, takeBlob } from "./description.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** The library's own descriptions of a fresh segment and jetty (null where it gave none). */
export interface ProbedBlobs {
  seg: Uint8Array | null;
  rjetty: Uint8Array | null;
}

/**
 * Asks the library for the descriptions of a throw-away segment and jetty. `u` may carry any
 * candidate ABI: nothing here reads a layout that differs between them. Throws what the
 * library throws (no device, cannot create).
 */
export function probeDescriptionBlobs(u: UrmaLib): ProbedBlobs {
  const s = u.lib.symbols;
  const ctx = UrmaContext.open(u);
  try {
    const jfc = ctx.createJfc(16);
    const jfr = ctx.createJfr(jfc, { depth: 4, token: 1 });
    const jetty = ctx.createJetty(jfc, jfr, { depth: 4 });
    const seg = ctx.registerSegment(new Uint8Array(4096), { token: 1 });
    const getSeg = s.urma_get_seg_ctx, putSeg = s.urma_put_seg_ctx;
    const getRj = s.urma_get_rjetty, putRj = s.urma_put_rjetty;
    return {
      seg: getSeg && putSeg
        ? takeBlob(u, (p, l) => getSeg(seg.handle, p, l), (p) => putSeg(p))
        : null,
      rjetty: getRj && putRj
        ? takeBlob(u, (p, l) => getRj(jetty.handle, p, l), (p) => putRj(p))
        : null,
    };
  } finally {
    ctx.close();
  }
}

/** The one candidate whose rules explain the blobs' lengths, or null (none, or several). */
export function abiFromBlobs(
  candidates: readonly string[],
  blobs: ProbedBlobs,
): UrmaAbiLayouts | null {
  if (!blobs.seg && !blobs.rjetty) return null;
  const fits = candidates.map((n) => urmaAbi(n)!).filter((abi) => {
    if (!abi.blob) return false;
    const ok = (rule: typeof abi.blob.seg, size: number, b: Uint8Array | null) =>
      b === null || (b.length >= size && blobLength(rule, b) === b.length);
    return ok(abi.blob.seg, abi.seg.$size, blobs.seg) &&
      ok(abi.blob.rjetty, abi.rjetty.$size, blobs.rjetty);
  });
  return fits.length === 1 ? fits[0] : null;
}

/** "urma_get_seg_ctx 68 B, urma_get_rjetty 68 B" (for the evidence line). */
export function describeBlobs(blobs: ProbedBlobs): string {
  const part = (name: string, b: Uint8Array | null) => `${name} ${b ? `${b.length} B` : "none"}`;
  return `${part("urma_get_seg_ctx", blobs.seg)}, ${part("urma_get_rjetty", blobs.rjetty)}`;
}
