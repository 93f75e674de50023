/**
 * What an idle fabric session costs the server (issue 10: idle server CPU < 1 % at 10,000
 * sessions). Every JS object a session keeps is walked by the engine's garbage collector, and on
 * Bun the collector runs about once a second for a while after any activity (its GC timer), so a
 * session must keep no DOM object the collector revisits in every collection, young or full: no
 * `AbortController`/`AbortSignal` unless a handler asks for `ctx.signal` (util/end_notice.ts has
 * the figures). And a server holding 1,000 idle sessions, its own CPU time read from /proc, uses
 * under 1 % of a core (a bound that also held before the change: at 1,000 sessions each
 * collection is cheap; it catches a per-session scan or busy poll, not the collector's cost).
 */
import { readFileSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { type Client, connect } from "../../rpc/client/client.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { withChild } from "../util/proc.ts";
import { serve } from "../../rpc/server/server.ts";
import { pattern, SHM_ONLY } from "./util.ts";
import { SMALL_REGION } from "../../bench/scale/common.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const td = new TextDecoder();
/** The scale bench's region (64 slots × 4 KiB, …): 1,000 sessions fit in a test. */
const TINY = SMALL_REGION;

async function open(port: number, n: number): Promise<Client[]> {
  const out: Client[] = [];
  const one = async () => {
    while (out.length < n) {
      const slot = out.length;
      out.push(undefined as unknown as Client);
      out[slot] = await connect({ host: "127.0.0.1", port }, { fabric: "shm", region: TINY });
    }
  };
  await Promise.all(Array.from({ length: 32 }, one));
  return out;
}

/** utime + stime of process `pid`, ms (CLK_TCK 100). */
function cpuMs(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

test("an idle fabric session makes no AbortController on the server", async () => {
  await withChild(RUNTIME as RuntimeName, "tests/fixtures/fabric_server.ts", {
    args: ["--count-aborts", "--slots", "64"],
  }, async (child) => {
    const clients = await open(child.port, 40);
    try {
      for (const c of clients) {
        const r = await c.call("verbus.Demo", "Echo", pattern(16, 1));
        assertEquals([r.fabric, r.response], ["shm", pattern(16, 1)]);
      }
      const r = await clients[0].call("test.Fabric", "Aborts", new Uint8Array(0));
      const made = Number(td.decode(r.response));
      // Two per session before (the session's, and its connection's for the handshake).
      assert(made < 4, `${made} AbortControllers on the server for 40 idle sessions`);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
}, { skip: SHM_ONLY, timeoutMs: 60_000 });

test("a handler's ctx.signal on a fabric session still aborts when the session ends", async () => {
  let seen: AbortSignal | undefined;
  const server = await serve({
    port: 0,
    services: {
      "test.Signal": {
        Keep: (_req, ctx) => {
          seen = ctx.signal;
          return new Uint8Array(0);
        },
      },
    },
    fabric: { region: TINY },
    logger: { warn: () => {}, info: () => {} },
  });
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    fabric: "shm",
    region: TINY,
  });
  try {
    const r = await c.call("test.Signal", "Keep", new Uint8Array(0));
    assertEquals(r.fabric, "shm");
    assert(seen !== undefined && !seen.aborted, "open while the session lives");
    const gone = new Promise<unknown>((res) => seen!.addEventListener("abort", res));
    await c.close();
    await Promise.race([gone, sleep(5000)]);
    assert(seen.aborted, "aborted once the session ended");
  } finally {
    await c.close();
    await server.close();
  }
}, { skip: SHM_ONLY, timeoutMs: 30_000 });

test("a server holding 1,000 idle shm sessions uses under 1 % of a core", async () => {
  await withChild(RUNTIME as RuntimeName, "tests/fixtures/fabric_server.ts", {
    args: ["--slots", "64"],
  }, async (child) => {
    const clients = await open(child.port, 1000);
    try {
      assertEquals(clients.filter((c) => c.fabric === "shm").length, 1000, "all on shm");
      await sleep(2000); // the handshakes' after-work (and their garbage) is done
      // The server's own CPU time (all its threads, its collector's included): not a timing.
      // Idle cost is a steady state: a per-session scan or a busy poll costs the same in every
      // window, while a one-off (a late full collection of the handshakes' garbage on a slow
      // machine: CI once read 1.40 % in a single window) spoils one. So up to three 5 s windows,
      // and the quietest must stay under 1 %.
      const seen: number[] = [];
      for (let w = 0; w < 3 && !(Math.min(...seen) < 1); w++) {
        const c0 = cpuMs(child.pid), t0 = performance.now();
        await sleep(5000);
        seen.push(((cpuMs(child.pid) - c0) / (performance.now() - t0)) * 100);
      }
      const pct = Math.min(...seen);
      assert(
        pct < 1,
        `the idle server used ${seen.map((p) => p.toFixed(2)).join(", ")} % of a core`,
      );
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
}, { skip: SHM_ONLY, timeoutMs: 120_000 });
