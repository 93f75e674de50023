/**
 * Real RDMA (Soft-RoCE rxe0/rxe1 in the VM): doctor sees both devices with GIDs; PD, MR over a
 * JS buffer, CQ + completion channel and RC QP are created and destroyed 1000 times through the
 * FFI layer with no leak (kernel resource counts and open fds before and after); and the helper's
 * batched data path (WRITE, READ, SEND_WITH_IMM; polling and event mode) moves real bytes
 * between rxe0 and rxe1.
 */
import { readdirSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { probeHost } from "../../transport/capabilities.ts";
import { loadVerbs } from "../../transport/verbs/verbs_lib.ts";
import { getEnv } from "../../ffi/runtime.ts";
import { openDevice } from "../../transport/verbs/device.ts";
import {
  IBV_ACCESS,
  IBV_QPS,
  IBV_SEND,
  IBV_WC_OPCODE,
  IBV_WR,
} from "../../ffi/symbols/libibverbs.ts";
import { connectPair, pollUntil, TestBatch, WcReader } from "./verbs_pair.ts";
import { kernelResourceCounts } from "./fabric_verbs_util.ts";

const GID_INDEX = Number(getEnv("SR_GID_INDEX") ?? 1);

function openFds(): number {
  return readdirSync("/proc/self/fd").length;
}

test("doctor lists rxe0 and rxe1 with ACTIVE ports and their RoCE v2 GIDs", async () => {
  const caps = await probeHost();
  const names = caps.rdma.devices.map((d) => d.name).sort();
  assertEquals(names, ["rxe0", "rxe1"], `devices (reason: ${caps.rdma.reason})`);
  for (const [dev, ip] of [["rxe0", "0a4d:0001"], ["rxe1", "0a4d:0002"]]) {
    const d = caps.rdma.devices.find((x) => x.name === dev)!;
    assertEquals(d.ports[0].state, "ACTIVE", `${dev} port state`);
    assertEquals(d.ports[0].linkLayer, "Ethernet", `${dev} link layer`);
    const v4 = d.ports[0].gids.find((g) => g.gid.endsWith(ip));
    assert(v4, `${dev} has the IPv4-mapped GID ending ${ip}: ${JSON.stringify(d.ports[0].gids)}`);
    assertEquals(v4.type, "RoCE v2", `${dev} gid type`);
  }
  assert(caps.fabrics.includes("verbs"), `fabrics ${caps.fabrics}`);
}, { timeoutMs: 60_000 });

test(
  "PD + MR over a JS buffer + CQ with channel + RC QP: 1000 open/close cycles leak nothing",
  async () => {
    const v = await loadVerbs();
    const before = kernelResourceCounts();
    const fdsBefore = openFds();
    assert(
      "rxe0.pd" in before && "rxe1.qp" in before,
      `rdma resource show parsed: ${JSON.stringify(before)}`,
    );
    const buf = new Uint8Array(64 * 1024);
    for (let i = 0; i < 1000; i++) {
      const ctx = openDevice(v, i % 2 ? "rxe1" : "rxe0");
      const pd = ctx.allocPd();
      const mr = pd.registerBuffer(
        buf,
        IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE | IBV_ACCESS.REMOTE_READ,
      );
      assert(mr.lkey !== 0 && mr.length === buf.length, "MR keys and length");
      const ch = ctx.createCompChannel();
      const cq = ctx.createCq(64, ch);
      const qp = pd.createQp({ sendCq: cq, recvCq: cq, maxSendWr: 32, maxRecvWr: 32 });
      assertEquals(qp.state, IBV_QPS.RESET, "new QP state");
      if (i === 1) {
        // The counter sees what we hold: proves the before/after comparison can fail.
        const during = kernelResourceCounts();
        for (const k of ["pd", "mr", "cq", "qp"]) {
          assertEquals(during[`rxe1.${k}`], before[`rxe1.${k}`] + 1, `rxe1 ${k} count while held`);
        }
      }
      if (i % 2) {
        ctx.close(); // parent closes its children first
        assert(
          qp.closed && mr.closed && cq.closed && ch.closed && pd.closed,
          "children closed by parent",
        );
      } else {
        qp.close();
        cq.close();
        ch.close();
        mr.close();
        pd.close();
        ctx.close();
      }
      ctx.close(); // safe twice
    }
    const after = kernelResourceCounts();
    assertEquals(after, before, "kernel RDMA resource counts before/after");
    // Not equal: another fd of this process (a pipe of an earlier test's child, closed when the
    // child is reaped) may close meanwhile. A leak grows the count (1,000 cycles: by up to 1,000).
    const fdsAfter = openFds();
    assert(fdsAfter <= fdsBefore, `open file descriptors before/after: ${fdsBefore} → ${fdsAfter}`);
  },
  { timeoutMs: 300_000 },
);

test(
  "batched WRITE, READ and SEND_WITH_IMM move real bytes rxe0 → rxe1 (one doorbell per batch)",
  async () => {
    const v = await loadVerbs();
    using pair = connectPair(v, "rxe0", "rxe1", GID_INDEX);
    const { a, b } = pair;
    // 16 RDMA WRITEs of 256 B each in ONE post, the last one signaled.
    a.local.fill(0);
    for (let i = 0; i < 4096; i++) a.local[i] = (i * 7 + 3) & 0xff;
    const batch = new TestBatch(16, 16);
    for (let i = 0; i < 16; i++) {
      batch.add(
        i === 15 ? IBV_SEND.SIGNALED : 0,
        IBV_WR.RDMA_WRITE,
        100 + i,
        b.mr.address + i * 256,
        b.mr.rkey,
        0,
        [[a.mr.address + i * 256, 256, a.mr.lkey]],
      );
    }
    assertEquals(batch.post(a.qp), 0, "post 16 writes");
    const wc = new WcReader(32);
    const got = await pollUntil(v, wc, a.cq, 1);
    assertEquals(got[0].status, 0, `write completion status ${got[0].statusStr}`);
    assertEquals(got[0].wrId, 115, "the signaled WR's id");
    assertEquals(got[0].opcode, IBV_WC_OPCODE.RDMA_WRITE, "opcode");
    assertEquals(b.local.subarray(0, 4096), a.local.subarray(0, 4096), "written bytes arrived");

    // RDMA READ 4 KiB back from rxe1 into a different spot of rxe0's buffer.
    for (let i = 0; i < 4096; i++) b.local[8192 + i] = (i * 13) & 0xff;
    batch.reset();
    batch.add(IBV_SEND.SIGNALED, IBV_WR.RDMA_READ, 7, b.mr.address + 8192, b.mr.rkey, 0, [[
      a.mr.address + 16384,
      4096,
      a.mr.lkey,
    ]]);
    assertEquals(batch.post(a.qp), 0, "post read");
    const r = await pollUntil(v, wc, a.cq, 1);
    assertEquals(
      [r[0].status, r[0].opcode, r[0].byteLen],
      [0, IBV_WC_OPCODE.RDMA_READ, 4096],
      "read completion",
    );
    assertEquals(
      a.local.subarray(16384, 16384 + 4096),
      b.local.subarray(8192, 8192 + 4096),
      "read bytes",
    );

    // SEND_WITH_IMM: receiver posts a recv, sender sends 64 B with imm 0xC0FFEE (host order both ends).
    assertEquals(b.postRecv(1, 32768, 64), 0, "post recv");
    for (let i = 0; i < 64; i++) a.local[32768 + i] = 200 - i;
    batch.reset();
    batch.add(IBV_SEND.SIGNALED, IBV_WR.SEND_WITH_IMM, 9, 0, 0, 0xC0FFEE, [[
      a.mr.address + 32768,
      64,
      a.mr.lkey,
    ]]);
    assertEquals(batch.post(a.qp), 0, "post send");
    const rcv = await pollUntil(v, wc, b.cq, 1);
    assertEquals([rcv[0].status, rcv[0].opcode, rcv[0].byteLen, rcv[0].imm, rcv[0].wrId], [
      0,
      IBV_WC_OPCODE.RECV,
      64,
      0xC0FFEE,
      1,
    ], "recv completion");
    assertEquals(
      b.local.subarray(32768, 32768 + 64),
      a.local.subarray(32768, 32768 + 64),
      "sent bytes",
    );
    const snd = await pollUntil(v, wc, a.cq, 1);
    assertEquals(snd[0].opcode, IBV_WC_OPCODE.SEND, "send completion");
  },
  { timeoutMs: 120_000 },
);

test(
  "event mode: req_notify + completion channel wake a nonblocking wait; a bad rkey completes with an error status",
  async () => {
    const v = await loadVerbs();
    using pair = connectPair(v, "rxe0", "rxe1", GID_INDEX, true);
    const { a, b } = pair;
    a.cq.reqNotify();
    const wait = a.cq.channel!.waitEvent(10_000);
    const batch = new TestBatch(1, 1);
    batch.add(IBV_SEND.SIGNALED, IBV_WR.RDMA_WRITE, 1, b.mr.address, b.mr.rkey, 0, [[
      a.mr.address,
      64,
      a.mr.lkey,
    ]]);
    assertEquals(batch.post(a.qp), 0, "post");
    assertEquals(await wait, true, "CQ event arrived");
    const wc = new WcReader(4);
    assertEquals((await pollUntil(v, wc, a.cq, 1))[0].status, 0, "completion after event");
    // Timeout path: no work posted, the wait resolves false.
    a.cq.reqNotify();
    assertEquals(await a.cq.channel!.waitEvent(200), false, "no event → timeout");
    // A remote access error (wrong rkey) surfaces as a status, named by ibv_wc_status_str.
    batch.reset();
    batch.add(IBV_SEND.SIGNALED, IBV_WR.RDMA_WRITE, 2, b.mr.address, b.mr.rkey ^ 0x5a5a, 0, [[
      a.mr.address,
      64,
      a.mr.lkey,
    ]]);
    assertEquals(batch.post(a.qp), 0, "post bad write");
    const bad = await pollUntil(v, wc, a.cq, 1);
    assert(bad[0].status !== 0, "error status");
    assert(
      /remote access error|REM_ACCESS/i.test(bad[0].statusStr),
      `status string: ${bad[0].statusStr}`,
    );
  },
  { timeoutMs: 120_000 },
);
