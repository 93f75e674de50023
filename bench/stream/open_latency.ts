/**
 * What opening a stream costs (`deno run -A bench/stream/open_latency.ts [--quick]` /
 * `bun bench/stream/open_latency.ts [--quick]`): a `verbus serve` child of the same runtime; this
 * process opens streams on `verbus.Demo/Count` with count 0 (the server accepts, answers and
 * closes: the open is all there is) one after another, timing `openStream()` alone (the opening
 * call until its answer connected the stream), then reads the stream to its end untimed.
 * Rows: a client with a shm session (the stream rides the session; its opening call still goes
 * over TCP and is answered on the session's stream pipe) and a TCP-only client; beside them a
 * unary `verbus.Demo/Ping` over each, which is what an open riding the fabric as an ordinary
 * call would cost at best. Rounds alternate the rows; each row's p50 / p99 in µs is the median
 * over rounds. Prints a markdown table (and JSON lines with `--json`).
 * Only ratios between rows of one run mean anything (the machine is shared and noisy).
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { selfCommand, type ServerProcess, startServe } from "../../cli/self.ts";
import { connect, openStream, RUNTIME } from "../../mod.ts";
import type { Client } from "../../rpc/client/client.ts";
import { encodeCountRequest } from "../../examples/demo/count.ts";
import { median } from "../common/median.ts";

const quick = process.argv.includes("--quick");
const json = process.argv.includes("--json");
const OPS = quick ? 300 : 2000, ROUNDS = quick ? 3 : 5;
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

type Row = { name: string; run: () => Promise<void> };

/** Times `ops` runs of `op` (µs each, sorted). */
async function timeOps(op: () => Promise<void>, ops: number): Promise<number[]> {
  const us: number[] = [];
  for (let i = 0; i < ops; i++) {
    const t0 = performance.now();
    await op();
    us.push((performance.now() - t0) * 1000);
  }
  return us.sort((a, b) => a - b);
}

const COUNT0 = encodeCountRequest(0);
const PING = new Uint8Array(0);

/** One open, timed until openStream resolves; the stream is then read to its end. */
function opener(c: Client): () => Promise<void> {
  return async () => {
    const t0 = performance.now();
    const { stream } = await openStream(c, "verbus.Demo", "Count", COUNT0);
    const dt = performance.now() - t0;
    while ((await stream.read()) !== undefined) { /* the server closes at once */ }
    opened.push(dt * 1000);
  };
}
let opened: number[] = [];

async function main(): Promise<void> {
  const server: ServerProcess = await startServe(selfCommand(["serve", "--port", "0", "--json"]));
  const load0 = loadavg();
  const shm = await connect(`127.0.0.1:${server.port}`);
  const tcp = await connect(`127.0.0.1:${server.port}`, { fabric: "tcp" });
  try {
    if (shm.fabric !== "shm") throw new Error(`no shm session: ${JSON.stringify(shm.handshake)}`);
    const rows: Row[] = [
      { name: "open, shm session", run: opener(shm) },
      { name: "open, TCP", run: opener(tcp) },
      {
        name: "unary Ping, shm",
        run: async () => void await shm.call("verbus.Demo", "Ping", PING),
      },
      {
        name: "unary Ping, TCP",
        run: async () => void await tcp.call("verbus.Demo", "Ping", PING),
      },
    ];
    const p50s = new Map<string, number[]>(), p99s = new Map<string, number[]>();
    for (const r of rows) await timeOps(r.run, Math.min(200, OPS)); // warm up
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? rows : [...rows].reverse();
      for (const r of order) {
        opened = [];
        let us = await timeOps(r.run, OPS);
        if (r.name.startsWith("open")) us = opened.sort((a, b) => a - b);
        (p50s.get(r.name) ?? p50s.set(r.name, []).get(r.name)!).push(pct(us, 0.5));
        (p99s.get(r.name) ?? p99s.set(r.name, []).get(r.name)!).push(pct(us, 0.99));
      }
    }
    const carrier = (await openStream(shm, "verbus.Demo", "Count", COUNT0)).stream.carrier;
    console.log(
      `\n${RUNTIME}: ${OPS} ops × ${ROUNDS} rounds, load ${load0} → ${loadavg()}; ` +
        `the shm client's streams ride: ${carrier}\n`,
    );
    console.log("| row | p50 µs | p99 µs |\n|---|---:|---:|");
    for (const r of rows) {
      const p50 = median(p50s.get(r.name)!), p99 = median(p99s.get(r.name)!);
      console.log(`| ${r.name} | ${p50.toFixed(1)} | ${p99.toFixed(1)} |`);
      if (json) console.log(JSON.stringify({ runtime: RUNTIME, row: r.name, p50, p99 }));
    }
  } finally {
    await shm.close();
    await tcp.close();
    await server.stop();
  }
}

await main();
