/**
 * URMA (simulated) across two processes of DIFFERENT runtimes on one host: this runtime and a
 * child of the other one (tests/urma/fixtures/peer.ts) exchange segments and jetties, then
 * WRITE, READ and SEND_IMM both ways; then the child dies and requests to it complete with
 * ACK_TIMEOUT instead of hanging.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, test } from "../harness.ts";
import { getEnv, RUNTIME } from "../../ffi/runtime.ts";
import { URMA_WR_FLAG, UrmaRecvBatch, UrmaSendBatch } from "../../transport/urma/data_path.ts";
import { URMA_CR } from "../../transport/urma/errors.ts";
import {
  fnv,
  fromHex,
  loadSim,
  makeSide,
  pattern,
  pollSome,
  SIM_PATH,
  SKIP_NO_SIM,
  toHex,
} from "./util.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const other = RUNTIME === "deno" ? "bun" : "deno";
const bin = getEnv(other === "deno" ? "VERBUS_DENO" : "VERBUS_BUN") ??
  `${ROOT}node_modules/.bin/${other}`;
const SKIP = SKIP_NO_SIM ||
  (existsSync(bin) ? false : `no ${other} binary at ${bin} (set VERBUS_${other.toUpperCase()})`);
const C = URMA_WR_FLAG.COMPLETE;

/** Starts the peer under the other runtime; reads its JSON lines. */
function spawnPeer() {
  const args = other === "deno"
    ? ["run", "-A", "tests/urma/fixtures/peer.ts"]
    : ["tests/urma/fixtures/peer.ts"];
  // deno-lint-ignore no-explicit-any
  const env = { ...(globalThis as any).process.env, VERBUS_LIBURMA: SIM_PATH, NO_COLOR: "1" };
  const child = spawn(bin, args, { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
  let out = "", err = "";
  child.stdout!.on("data", (d: Uint8Array) => (out += new TextDecoder().decode(d)));
  child.stderr!.on("data", (d: Uint8Array) => (err += new TextDecoder().decode(d)));
  const exited = new Promise<number | null>((r) =>
    child.on("exit", (code: number | null) => r(code))
  );
  const readJson = async (ms = 20_000) => {
    const end = Date.now() + ms;
    while (!out.includes("\n")) {
      if (Date.now() > end || child.exitCode !== null) {
        throw new Error(`no answer from the ${other} peer; stderr:\n${err}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const i = out.indexOf("\n");
    const line = out.slice(0, i);
    out = out.slice(i + 1);
    return JSON.parse(line);
  };
  const send = (o: unknown) =>
    child.stdin!.write((typeof o === "string" ? o : JSON.stringify(o)) + "\n");
  return { child, readJson, send, exited };
}

test(
  `two processes (${RUNTIME} ↔ ${other}): WRITE, READ and SEND_IMM both ways; a dead peer → ACK_TIMEOUT`,
  async () => {
    const u = await loadSim();
    const { child, readJson, send, exited } = spawnPeer();
    const me = makeSide(u, 65536, 0x5eed);
    try {
      const hello = await readJson();
      assertEquals([hello.ready, hello.runtime, hello.simulated], [true, other, true]);
      // import the peer's segment BEFORE its jetty
      const pSeg = me.ctx.importSegment(fromHex(hello.seg), hello.token);
      const pJetty = me.ctx.importJetty(
        { ...hello.jetty, eid: fromHex(hello.jetty.eid) },
        hello.token,
      );
      const rb = new UrmaRecvBatch(u, 2);
      rb.recv(me.seg, me.seg.address + 40000, 1024, 500);
      assertEquals(rb.post(me.jetty), 0);
      const a = me.jetty.address;
      send({
        jetty: { eid: toHex(a.eid), uasid: a.uasid, id: a.id, transMode: a.transMode },
        seg: toHex(me.seg.descriptor),
        token: me.token,
      });

      // WRITE 512 B into the peer, READ its 4 KiB pattern, SEND_IMM 16 B
      pattern(me.buf.subarray(0, 512), 11);
      me.buf.set(new TextEncoder().encode("hello from " + RUNTIME).subarray(0, 16), 2000);
      const sb = new UrmaSendBatch(u, 4, 4);
      sb.sge(me.seg, me.seg.address, 512);
      sb.write(pJetty, pSeg, pSeg.address + 16384, 1, C);
      sb.sge(me.seg, me.seg.address + 8192, 4096);
      sb.read(pJetty, pSeg, pSeg.address, 2, C);
      sb.sge(me.seg, me.seg.address + 2000, 16);
      sb.send(pJetty, 0x11_2233_4455, 3, C);
      assertEquals(sb.post(me.jetty), 0, u.lastError());
      assertEquals(me.jfc.poll(me.cr), 3);
      assertEquals([0, 1, 2].map((i) => me.cr.status(i)), [0, 0, 0], u.lastError());
      assertEquals(
        me.buf.subarray(8192, 8192 + 4096),
        pattern(new Uint8Array(4096), 5),
        "READ returned the peer's bytes",
      );

      const report = await readJson();
      assertEquals(report.got?.imm, 0x11_2233_4455, JSON.stringify(report));
      assertEquals([report.got.len, report.got.ctx, report.got.status], [16, 100, 0]);
      assertEquals(report.got.from, [a.uasid, a.id], "the receive names the sender's jetty");
      assertEquals(fromHex(report.got.msg), me.buf.subarray(2000, 2016));
      assertEquals(report.written, fnv(pattern(new Uint8Array(512), 11)), "the peer saw our WRITE");
      assertEquals([report.post, ...report.sendStatus], [0, 2, 0, 0]);

      // the peer's WRITE landed before its SEND_IMM completed here
      assertEquals(await pollSome(me), 1);
      assertEquals([me.cr.isRecv(0), me.cr.imm(0), me.cr.userCtx(0), me.cr.status(0)], [
        true,
        0xabcdef01234,
        500,
        0,
      ]);
      assertEquals(me.buf.subarray(1000, 1256), pattern(new Uint8Array(256), 9));

      // the peer dies without cleaning up: requests to it complete with ACK_TIMEOUT, no hang
      send("crash");
      await exited;
      sb.reset();
      sb.sge(me.seg, me.seg.address, 64);
      sb.write(pJetty, pSeg, pSeg.address, 7, C);
      sb.sge(me.seg, me.seg.address, 8);
      sb.send(pJetty, 1, 8, C);
      assertEquals(sb.post(me.jetty), 0);
      assertEquals(me.jfc.poll(me.cr), 2);
      assertEquals([me.cr.status(0), me.cr.status(1)], [
        URMA_CR.ACK_TIMEOUT_ERR,
        URMA_CR.ACK_TIMEOUT_ERR,
      ]);
      // and its registry entries are reclaimed: importing its jetty again fails
      let refused = false;
      try {
        me.ctx.importJetty({ ...hello.jetty, eid: fromHex(hello.jetty.eid) }, hello.token);
      } catch {
        refused = true;
      }
      assert(refused, "a dead peer's jetty can no longer be imported");
    } finally {
      me.ctx.close();
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  },
  { skip: SKIP, timeoutMs: 60_000 },
);

test(`two processes: the ${other} peer closes cleanly and reports zero live objects`, async () => {
  const u = await loadSim();
  const me = makeSide(u, 65536, 0x77);
  const { child, readJson, send, exited } = spawnPeer();
  try {
    const hello = await readJson();
    const a = me.jetty.address;
    send({
      jetty: { eid: toHex(a.eid), uasid: a.uasid, id: a.id, transMode: a.transMode },
      seg: toHex(me.seg.descriptor),
      token: me.token,
    });
    me.ctx.importSegment(fromHex(hello.seg), hello.token); // segment before jetty
    const pJetty = me.ctx.importJetty(
      { ...hello.jetty, eid: fromHex(hello.jetty.eid) },
      hello.token,
    );
    const rb = new UrmaRecvBatch(u, 1);
    rb.recv(me.seg, me.seg.address, 64, 1);
    rb.post(me.jetty);
    const sb = new UrmaSendBatch(u, 1, 1);
    sb.sge(me.seg, me.seg.address, 8);
    sb.send(pJetty, 5, 1, C);
    assertEquals(sb.post(me.jetty), 0);
    const report = await readJson();
    assertEquals(report.got?.imm, 5, JSON.stringify(report));
    send("bye");
    const bye = await readJson();
    assertEquals([bye.closed, bye.live.total], [true, 0], JSON.stringify(bye));
    assertEquals(await exited, 0);
  } finally {
    me.ctx.close();
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}, { skip: SKIP, timeoutMs: 60_000 });
