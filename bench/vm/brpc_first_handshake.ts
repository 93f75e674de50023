/**
 * Where the time of brpc's RDMA handshake goes, first connection against later ones, INSIDE the
 * Soft-RoCE VM (issue 35's target: the first handshake ≤ 0.5 s after the device is open):
 *
 *   SR_SHARE=$PWD ../shared/softroce/run-in-vm.sh 'bash bench/vm/both_runtimes.sh bench/vm/brpc_first_handshake.ts'
 *
 * A server process (same runtime) opens rxe1 ahead (`prepareBrpcRdma`, as `serve()` does), then
 * runs brpc's server handshake on each accepted TCP connection and writes its state machine's
 * history (each transition's ms since the handshake began) to a file. The client opens rxe0
 * ahead, then makes `--connections` connections one after the other: TCP connect, client
 * handshake (its history), close. Prints, per connection, both sides' steps in ms. The VM's CPU
 * is emulated (qemu TCG): the split between steps, and first against later, is what means
 * something, not the absolute times.
 *
 * Writes bench/results/brpc-first-handshake-vm-<runtime>.md.
 * @module
 */
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import {
  brpcRdmaOptionsSchema,
  clientHandshake,
  openBrpcQp,
  prepareBrpcRdma,
  serverHandshake,
} from "../../transport/brpc_rdma/mod.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { ROOT, spawnServerRole } from "./vm_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";
const CONNECTIONS = Number(args[args.indexOf("--connections") + 1]) || 4;
const LOG = join(ROOT, `build/first-handshake-server-${RUNTIME}.jsonl`);

type Step = { from: string; to: string; atMs: number; reason?: string };

const steps = (h: readonly Step[]) =>
  h.map((s) => `${s.to} ${s.atMs}${s.reason ? ` (${s.reason})` : ""}`).join(", ");

async function serveRole(): Promise<void> {
  const o = brpcRdmaOptionsSchema.parse({ device: "rxe1", handshakeTimeoutMs: 30_000 });
  const t0 = performance.now();
  await prepareBrpcRdma(o, SERVER);
  const openMs = Math.round(performance.now() - t0);
  rmSync(LOG, { force: true });
  let n = 0;
  const listener = await tcp.listen({
    host: SERVER,
    port: 0,
    onConnection(conn) {
      const k = ++n;
      void serverHandshake(conn, o, openBrpcQp, 0).then((out) => {
        appendFileSync(LOG, JSON.stringify({ k, state: out.state, history: out.history }) + "\n");
        out.conn?.close();
      });
    },
  });
  console.error(`first-handshake server: device open ${openMs} ms`);
  console.log(`listening on ${listener.port}`);
}

async function main(): Promise<void> {
  const srv = await spawnServerRole("bench/vm/brpc_first_handshake.ts", ["--serve"]);
  const o = brpcRdmaOptionsSchema.parse({ device: "rxe0", handshakeTimeoutMs: 30_000 });
  let t0 = performance.now();
  await prepareBrpcRdma(o, CLIENT);
  const openMs = Math.round(performance.now() - t0);
  const rows: string[] = [];
  const client: { k: number; tcpMs: number; totalMs: number; history: readonly Step[] }[] = [];
  try {
    for (let k = 1; k <= CONNECTIONS; k++) {
      t0 = performance.now();
      const conn = await tcp.connect({ host: SERVER, port: srv.port, timeoutMs: 30_000 });
      const tcpMs = Math.round((performance.now() - t0) * 10) / 10;
      const out = await clientHandshake(conn, o, openBrpcQp);
      const totalMs = Math.round((performance.now() - t0) * 10) / 10;
      if (out.state !== "ESTABLISHED") {
        throw new Error(`connection ${k}: ${out.state} ${out.reason}`);
      }
      client.push({ k, tcpMs, totalMs, history: out.history });
      out.conn?.close();
      await new Promise((r) => setTimeout(r, 200)); // the server logs its side
    }
  } finally {
    srv.kill();
  }
  const server = new Map<number, { state: string; history: Step[] }>();
  for (const line of readFileSync(LOG, "utf8").split("\n").filter(Boolean)) {
    const r = JSON.parse(line);
    server.set(r.k, r);
  }
  for (const c of client) {
    const s = server.get(c.k);
    rows.push(
      `| ${c.k} | ${c.tcpMs} | ${c.totalMs} | ${steps(c.history)} | ${
        s ? steps(s.history) : "(not logged)"
      } |`,
    );
  }
  const md = [
    `# brpc RDMA handshake, first connection against later ones (${RUNTIME}, Soft-RoCE VM)`,
    "",
    `Client device open (rxe0, prepareBrpcRdma) ${openMs} ms; server process started in ${
      Math.round(srv.startMs)
    } ms (its device opened before it listened). Then ${CONNECTIONS} connections one after`,
    "the other. Times in ms: TCP connect, then connect + handshake in all, then each side's",
    "state machine: the state entered and when (ms since that side's handshake began; the",
    "server's starts when its first bytes are read).",
    "",
    "| connection | TCP connect | connect + handshake | client steps | server steps |",
    "|---|---:|---:|---|---|",
    ...rows,
    "",
    "Made by `bash bench/vm/both_runtimes.sh bench/vm/brpc_first_handshake.ts` in the Soft-RoCE VM (qemu TCG: emulated",
    "CPU, so compare the steps and the connections, not the absolute times).",
    "",
  ].join("\n");
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, `bench/results/brpc-first-handshake-vm-${RUNTIME}.md`), md);
  console.log(md);
  g.process.exit(0);
}

if (args.includes("--serve")) await serveRole();
else await main();
