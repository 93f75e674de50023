/**
 * Host micro measurement of the copies brpc's RDMA mode makes per byte, without a device: the two
 * data paths as they were (encode into a heap slab, then copy into a send slot; receive: copy the
 * block, then parse it as owned) against the zero-copy ones (encode into the send ring, send from
 * there; parse the lent block, copying payloads only). Same frames, same parser; the "device"
 * does nothing. Reports MB/s of frame bytes per path (median of rounds) and the bytes copied per
 * frame byte beyond encoding (encoding copies the payload into the output on every path).
 *
 *   node_modules/.bin/deno run -A bench/brpc_rdma/copy_micro.ts [--json]
 *   node_modules/.bin/bun bench/brpc_rdma/copy_micro.ts [--json]
 *
 * It measures the copy work on this host's CPU only: no verbs, no Soft-RoCE, no wire.
 */
import { encodeFrameTo, type FrameSink } from "../../rpc/protocol/frame.ts";
import { FrameParser } from "../../rpc/protocol/frame_parser.ts";

const BLOCK = 8160; // brpc's receive block
const ROUNDS = 7;
/** Frames above this are queued outside the send ring (ConnBase's dedicated buffers): copied. */
const DEDICATED = 64 * 1024;
const TARGET_BYTES = 32 * 1024 * 1024; // per round

/** A sink over one buffer, restarted when full (the frames are thrown away). */
class Sink implements FrameSink {
  used = 0;
  /** Where the last frame went, and its length. */
  at = 0;
  n = 0;
  constructor(readonly writeBuffer: Uint8Array) {}
  reserve(n: number): number {
    if (this.used + n > this.writeBuffer.length) this.used = 0;
    return this.at = this.used;
  }
  commit(n: number): void {
    this.used += n;
    this.n = n;
  }
}

/** Frames of `size` payload bytes, one message's worth of wire bytes per round. */
function sendRound(size: number, copyToSlot: boolean, heap: Sink, ring: Sink, slot: Uint8Array) {
  const payload = new Uint8Array(size).fill(7);
  let bytes = 0, copied = 0, id = 0;
  while (bytes < TARGET_BYTES) {
    const sink = copyToSlot ? heap : ring;
    encodeFrameTo(sink, { correlationId: id++ }, payload);
    const at = sink.at, n = sink.n;
    if (copyToSlot || n > DEDICATED) {
      // Then (and now for frames over 64 KiB, queued outside the ring): each piece of at most
      // one block copied into registered send memory.
      for (let o = 0; o < n; o += BLOCK) {
        const k = Math.min(BLOCK, n - o);
        slot.set(heap.writeBuffer.subarray(at + o, at + o + k));
        copied += k;
      }
    }
    bytes += n;
  }
  return { bytes, copied };
}

/** The wire bytes of frames of `size`, cut into receive blocks. */
function blocksOf(size: number): Uint8Array[] {
  const sink = new Sink(new Uint8Array(TARGET_BYTES + 1024 * 1024));
  const payload = new Uint8Array(size).fill(9);
  let id = 0;
  while (sink.used < TARGET_BYTES) encodeFrameTo(sink, { correlationId: id++ }, payload);
  const wire = sink.writeBuffer.subarray(0, sink.used);
  const out: Uint8Array[] = [];
  for (let o = 0; o < wire.length; o += BLOCK) out.push(wire.subarray(o, o + BLOCK));
  return out;
}

function recvRound(blocks: Uint8Array[], lent: boolean) {
  let frames = 0, bytes = 0, sliced = 0;
  const parser = new FrameParser(() => void frames++);
  const block = new Uint8Array(BLOCK);
  for (const b of blocks) {
    block.set(b); // the NIC's write into the registered block (not counted: both paths)
    const chunk = block.subarray(0, b.length);
    if (lent) parser.push(chunk, true);
    else {
      parser.push(chunk.slice()); // then: the block copied out, then parsed as owned
      sliced += b.length;
    }
    bytes += b.length;
  }
  return { bytes, copied: sliced + parser.copiedBytes, frames };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function measure(f: () => { bytes: number; copied: number }) {
  const rates: number[] = [];
  let last = { bytes: 0, copied: 0 };
  f(); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    last = f();
    rates.push(last.bytes / 1e6 / ((performance.now() - t0) / 1000));
  }
  return { mbps: Math.round(median(rates)), copiedPerByte: +(last.copied / last.bytes).toFixed(3) };
}

const runtime = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined" ? "bun" : "deno";
const rows: Record<string, unknown>[] = [];
const heap = new Sink(new Uint8Array(1024 * 1024));
const ring = new Sink(new Uint8Array(1024 * 1024));
const slot = new Uint8Array(BLOCK);
for (const size of [64, 1024, 4096, 32768, 262144]) {
  const blocks = blocksOf(size);
  rows.push({
    runtime,
    payload: size,
    sendCopy: measure(() => sendRound(size, true, heap, ring, slot)),
    sendRing: measure(() => sendRound(size, false, heap, ring, slot)),
    recvSliced: measure(() => recvRound(blocks, false)),
    recvLent: measure(() => recvRound(blocks, true)),
  });
}
if (cliArgs().includes("--json")) console.log(JSON.stringify(rows));
else {
  console.log(`brpc RDMA copies, host micro (${runtime}): MB/s of frame bytes, copies per byte`);
  console.log(
    "payload | send then (copy to slot) | send now (ring) | recv then (slice) | recv now (lent)",
  );
  for (const r of rows) {
    const f = (x: unknown) => {
      const m = x as { mbps: number; copiedPerByte: number };
      return `${m.mbps} MB/s, ${m.copiedPerByte}`;
    };
    console.log(
      `${r.payload} | ${f(r.sendCopy)} | ${f(r.sendRing)} | ${f(r.recvSliced)} | ${f(r.recvLent)}`,
    );
  }
}

function cliArgs(): string[] {
  const g = globalThis as { Deno?: { args: string[] }; process?: { argv: string[] } };
  return g.Deno?.args ?? g.process?.argv.slice(2) ?? [];
}
