/**
 * Test fixture: two RC QPs on two devices of this host, connected to each other in-process
 * (QP numbers and GIDs exchanged directly), each with a 64 KiB registered buffer.
 */
import { IBV_ACCESS } from "../../ffi/symbols/libibverbs.ts";
import type { Context } from "../../transport/verbs/context.ts";
import type { CompletionQueue } from "../../transport/verbs/cq.ts";
import { wcStatusStr } from "../../transport/verbs/cq.ts";
import { openDevice } from "../../transport/verbs/device.ts";
import type { MemoryRegion } from "../../transport/verbs/mr.ts";
import { directQpSteps, type QueuePair } from "../../transport/verbs/qp.ts";
import { FULL, SendBatch } from "../../transport/verbs/send_batch.ts";
import type { VerbsLib } from "../../transport/verbs/verbs_lib.ts";
import { WcReader } from "../../transport/verbs/wc_reader.ts";
import { VB_RECV_DESC, VB_SGE } from "../../ffi/layouts/helper.ts";

export interface End {
  ctx: Context;
  local: Uint8Array;
  mr: MemoryRegion;
  cq: CompletionQueue;
  qp: QueuePair;
  postRecv(wrId: number, offset: number, length: number): number;
}

function end(v: VerbsLib, dev: string, events: boolean): End {
  const ctx = openDevice(v, dev);
  const pd = ctx.allocPd();
  const local = new Uint8Array(64 * 1024);
  const mr = pd.registerBuffer(
    local,
    IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE | IBV_ACCESS.REMOTE_READ,
  );
  const cq = ctx.createCq(128, events ? ctx.createCompChannel() : null);
  const qp = pd.createQp({ sendCq: cq, recvCq: cq, maxSendWr: 64, maxRecvWr: 64 });
  const rdesc = new Uint8Array(VB_RECV_DESC.$size),
    rsge = new Uint8Array(VB_SGE.$size),
    bad = new Uint32Array(1);
  return {
    ctx,
    local,
    mr,
    cq,
    qp,
    postRecv(wrId, offset, length) {
      const d = new DataView(rdesc.buffer), s = new DataView(rsge.buffer);
      d.setBigUint64(VB_RECV_DESC.wr_id, BigInt(wrId), true);
      d.setUint32(VB_RECV_DESC.sge_index, 0, true);
      d.setUint32(VB_RECV_DESC.num_sge, 1, true);
      s.setBigUint64(VB_SGE.addr, mr.addr + BigInt(offset), true);
      s.setUint32(VB_SGE.length, length, true);
      s.setUint32(VB_SGE.lkey, mr.lkey, true);
      return qp.postRecv(rdesc, rsge, 1, bad);
    },
  };
}

/** Connects an RC QP on `devA` with one on `devB`. Dispose closes both contexts (and children). */
export function connectPair(
  v: VerbsLib,
  devA: string,
  devB: string,
  gidIndex: number,
  events = false,
) {
  const a = end(v, devA, events), b = end(v, devB, events);
  const access = IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE | IBV_ACCESS.REMOTE_READ;
  const ga = a.ctx.queryGid(1, gidIndex), gb = b.ctx.queryGid(1, gidIndex);
  a.qp.bringUp(directQpSteps({
    remote: { qpNum: b.qp.qpNum, psn: 0x1234, gid: gb },
    port: 1,
    sgidIndex: gidIndex,
    psn: 0x4321,
    access,
  }));
  b.qp.bringUp(directQpSteps({
    remote: { qpNum: a.qp.qpNum, psn: 0x4321, gid: ga },
    port: 1,
    sgidIndex: gidIndex,
    psn: 0x1234,
    access,
  }));
  return {
    a,
    b,
    [Symbol.dispose]() {
      a.ctx.close();
      b.ctx.close();
    },
  };
}

/** Test-side convenience over SendBatch: one call per WR with its SGE list. */
export class TestBatch extends SendBatch {
  add(
    flags: number,
    opcode: number,
    wrId: number,
    remoteAddr: number,
    rkey: number,
    imm: number,
    sges: Array<[number, number, number]>,
  ): void {
    for (const [addr, len, lkey] of sges) {
      if (this.sge(addr, len, lkey) === FULL) throw new Error("SGE FULL");
    }
    if (this.wr(opcode, flags, wrId, remoteAddr, rkey, imm) === FULL) throw new Error("WR FULL");
  }
}

/** One completion as an object (tests only). */
export interface Wc {
  wrId: number;
  status: number;
  statusStr: string;
  opcode: number;
  byteLen: number;
  imm: number;
}

/** Test-side: poll until `n` completions arrived (or 10 s), as objects. */
export async function pollUntil(
  v: VerbsLib,
  reader: WcReader,
  cq: CompletionQueue,
  n: number,
): Promise<Wc[]> {
  const out: Wc[] = [];
  const deadline = Date.now() + 10_000;
  while (out.length < n) {
    const got = reader.poll(cq);
    for (let i = 0; i < got; i++) {
      out.push({
        wrId: reader.wrId(i),
        status: reader.status(i),
        statusStr: wcStatusStr(v, reader.status(i)),
        opcode: reader.opcode(i),
        byteLen: reader.byteLen(i),
        imm: reader.imm(i),
      });
    }
    if (Date.now() > deadline) {
      throw new Error(`only ${out.length} of ${n} completions within 10 s`);
    }
    if (got === 0) await new Promise((r) => setTimeout(r, 1));
  }
  return out;
}

export { WcReader };
