/**
 * Connections within the file-descriptor budget: a server started under `ulimit -n 128` meets
 * 300 idle peers. With the default options its connection cap is derived from the open-file
 * limit (so `accept` never runs out of descriptors), the refusals are logged once with the
 * numbers and counted, the idle peers are shed sooner while the cap is full, and a client that
 * connects after them is served. With a cap above the limit (`accept` meets EMFILE), accepting
 * pauses and backs off — logged once, counted, no busy loop (Bun's native accept loop spun a
 * full core before) — and resumes once descriptors are free. CPU is the child's utime + stime.
 * @module
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { RUNTIME } from "../../ffi/runtime.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { assert, test } from "../harness.ts";
import { sleep } from "./tcp_peers.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const te = new TextEncoder();
const td = new TextDecoder();
const NOFILE = 128;
const PEERS = 300;

interface Limited {
  readonly port: number;
  readonly pid: number;
  readonly log: string[];
  /** CPU (user + system) of the child so far, in seconds. */
  cpu(): number;
  stop(): Promise<void>;
}

/** The TCP fixture server under `ulimit -n NOFILE`, its stderr lines collected. */
async function startLimited(options: Record<string, unknown>): Promise<Limited> {
  const file = new URL("./fixtures/tcp_server.ts", import.meta.url).pathname;
  const cmd = RUNTIME === "deno"
    ? [g.Deno.execPath(), "run", "-A", "--v8-flags=--expose-gc", file]
    : [g.process.execPath, file];
  const child = spawn(
    "bash",
    ["-c", `ulimit -n ${NOFILE}; exec "$@"`, "bash", ...cmd, JSON.stringify(options)],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let ended = "";
  const exited = new Promise<void>((r) =>
    child.once("exit", (code, signal) => {
      ended = `exited (${code ?? signal})`;
      r();
    })
  );
  const log: string[] = [];
  let err = "";
  child.stderr!.on("data", (d: Uint8Array) => {
    err += String(d);
    const lines = err.split("\n");
    err = lines.pop()!;
    log.push(...lines);
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Uint8Array) => {
      out += String(d);
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`fixture exited (${code}): ${log.join("\n")}`)));
  });
  const pid = child.pid!;
  return {
    port,
    pid,
    log,
    cpu() {
      if (ended) throw new Error(`the server ${ended}:\n${log.join("\n")}`);
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
      return (Number(f[11]) + Number(f[12])) / 100; // utime, stime (fields 14, 15) in ticks
    },
    async stop() {
      child.stdin!.end();
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Opens `n` idle connections (each gives up after 3 s: past the backlog a SYN is dropped). */
async function idlePeers(port: number, n: number): Promise<TcpConn[]> {
  const all = await Promise.allSettled(
    Array.from({ length: n }, () => tcp.connect({ host: "127.0.0.1", port, timeoutMs: 3000 })),
  );
  return all.flatMap((r) => r.status === "fulfilled" ? [r.value] : []);
}

/** The server's `stats()`, through its `t.Rel/Stats` method on `ch`. */
async function stats(ch: Awaited<ReturnType<typeof connect>>): Promise<Record<string, number>> {
  return JSON.parse(td.decode((await ch.call("t.Rel", "Stats", new Uint8Array(0))).response));
}

/** Tries a fresh client (connect + Echo) until one is answered; resolves with the time taken. */
async function servedWithin(port: number, ms: number): Promise<number> {
  const t0 = performance.now();
  let last = "";
  while (performance.now() - t0 < ms) {
    try {
      const ch = await connect({ host: "127.0.0.1", port }, { timeoutMs: 1000 });
      try {
        const r = await ch.call("t.Rel", "Echo", te.encode("late"), { timeoutMs: 1000 });
        if (td.decode(r.response) === "late") return performance.now() - t0;
      } finally {
        await ch.close();
      }
    } catch (e) {
      last = String(e);
    }
    await sleep(200);
  }
  throw new Error(`no answer to a new client within ${ms} ms (last: ${last})`);
}

/** CPU share of a core the child used over `ms`. */
async function cpuShare(s: Limited, ms: number): Promise<number> {
  const c0 = s.cpu(), t0 = performance.now();
  await sleep(ms);
  return (s.cpu() - c0) / ((performance.now() - t0) / 1000);
}

test(
  `default cap under ulimit -n ${NOFILE}: ${PEERS} idle peers refused past it, logged once, ` +
    `shed sooner; a later client is served; no spin`,
  async () => {
    const s = await startLimited({});
    const early = await connect({ host: "127.0.0.1", port: s.port });
    let peers: TcpConn[] = [];
    try {
      const before = await stats(early);
      assert(before.maxConnections < NOFILE, `cap ${before.maxConnections} under the fd limit`);
      peers = await idlePeers(s.port, PEERS);
      const cpu = await cpuShare(s, 2500);
      assert(cpu < 0.2, `CPU while the cap is full: ${(cpu * 100).toFixed(1)} % of a core`);
      const st = await stats(early);
      assert(st.refusedConnections > 0, JSON.stringify(st));
      const refusals = s.log.filter((l) => l.includes("refusing connection"));
      assert(refusals.length === 1, `one line for the spell:\n${s.log.join("\n")}`);
      assert(
        refusals[0].includes(`open-file limit ${NOFILE}`) &&
          refusals[0].includes(`max_connections=${st.maxConnections}`),
        refusals[0],
      );
      const took = await servedWithin(s.port, 12_000);
      const after = await stats(early);
      assert(after.idleTimeouts > 0, `idle peers were shed: ${JSON.stringify(after)}`);
      assert(took > 0);
    } finally {
      for (const p of peers) p.close();
      await early.close();
      await s.stop();
    }
  },
  { timeoutMs: 60_000 },
);

test(
  `a cap above the fd limit: accept runs out of descriptors, pauses (logged once, counted, ` +
    `no spin), resumes when descriptors are free`,
  async () => {
    const s = await startLimited({ maxConnections: 1000 });
    const early = await connect({ host: "127.0.0.1", port: s.port });
    let peers: TcpConn[] = [];
    try {
      peers = await idlePeers(s.port, PEERS);
      const cpu = await cpuShare(s, 2500);
      assert(cpu < 0.2, `CPU while out of descriptors: ${(cpu * 100).toFixed(1)} % of a core`);
      const st = await stats(early);
      assert(st.acceptPauses > 0, JSON.stringify(st));
      const pauses = s.log.filter((l) => l.includes("not accepting connections"));
      assert(pauses.length === 1, `one line for the spell:\n${s.log.join("\n")}`);
      assert(pauses[0].includes("connections open, max_connections=1000"), pauses[0]);
      // A connection accepted before goes on being served meanwhile.
      const r = await early.call("t.Rel", "Echo", te.encode("still"));
      assert(td.decode(r.response) === "still");
      for (const p of peers) p.close();
      peers = [];
      await servedWithin(s.port, 10_000);
    } finally {
      for (const p of peers) p.close();
      await early.close();
      await s.stop();
    }
  },
  {
    timeoutMs: 60_000,
    // Seen here: with its descriptors gone, Deno 2.9 itself panics (an unwrap of EMFILE in
    // ext/signals) within seconds, whatever the program does; the default cap above exists so
    // that a server never gets there. The listener's backoff is the same code path on Deno.
    skip: RUNTIME === "deno" ? "Deno panics when its own descriptors run out (ext/signals)" : false,
  },
);
