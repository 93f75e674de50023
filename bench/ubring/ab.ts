/**
 * A/B of two versions of verbus on the bench-ubring verbus ↔ verbus row (shm fabric, an
 * attachment echoed back), in alternating rounds: per round, runtime and depth it starts a
 * `verbus serve --fabric shm` of side A and drives it with `client.ts --mode shm` run inside A's
 * tree, then the same for B. With `--mode ubring --brpc DIR` it is the verbus → brpc row
 * instead: one stock `ubring_performance_server --use_ubring` for the whole run, driven by each
 * side's `client.ts --mode ubring` (the server's CPU is brpc's). Both sides run THIS tree's `client.ts` (copied into an extracted
 * revision), so only the library differs. Prints per cell the median calls/s, p50, CPU µs per
 * call of the client (its own `/proc/self/stat`) and of the server (`/proc/PID/stat` around the
 * client's run, warm-up included: ÷ all the calls the client made), and the paths the client's
 * calls took; then the medians of the per-round B/A ratios. The machine is shared: read ratios
 * and CPU per call, not wall-clock figures.
 *
 *   deno run -A bench/ubring/ab.ts [--a HEAD~1] [--b .] [--runtime deno|bun|both] [--rounds 3]
 *       [--depths 1,32] [--attachment 65536] [--seconds 2] [--mode shm|ubring --brpc DIR]
 *       [--out FILE.json]
 *
 * A side is a directory or a git revision (`bench/common/revision_tree.ts`).
 * @module
 */
import { copyFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { startServe } from "../../cli/self.ts";
import { arg, exit, numArg, runtimesArg } from "../common/args.ts";
import { childJson } from "../common/child_json.ts";
import { median } from "../common/median.ts";
import { procUsage } from "../common/proc_cpu.ts";
import { RevisionTrees } from "../common/revision_tree.ts";
import { RUNTIME_BIN, verbusCli } from "../common/verbus_cli.ts";
import { BRPC_SERVER_READY, startReady } from "./ready_process.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const trees = new RevisionTrees(ROOT);
const SIDES = [trees.side(arg("a", "HEAD~1")), trees.side(arg("b", "."))];
const RUNTIMES = runtimesArg();
const ROUNDS = numArg("rounds", 3), SECONDS = numArg("seconds", 2);
const DEPTHS = arg("depths", "1,32").split(",").map(Number);
const ATTACHMENT = numArg("attachment", 65536);
const OUT = arg("out", "");
const MODE = arg("mode", "shm");
const BRPC = arg("brpc", "");
if (MODE !== "shm" && !(MODE === "ubring" && BRPC)) {
  console.error(`ab.ts: --mode shm, or --mode ubring with --brpc DIR (got --mode ${MODE})`);
  exit(2);
}
for (const s of SIDES) {
  if (s.root !== ROOT) {
    copyFileSync(join(ROOT, "bench/ubring/client.ts"), join(s.root, "bench/ubring/client.ts"));
  }
}

/** One client run against a fresh server of the same side. */
interface Cell {
  callsPerSec: number;
  p50Us: number;
  clientCpuUs: number;
  serverCpuUs: number;
  paths?: Record<string, number>;
}

/** The stock brpc server of `--mode ubring`, one for the whole run. */
const brpc = MODE === "ubring"
  ? await startReady(
    [join(BRPC, "ubring_performance_server"), ["--use_ubring", "--port=0"]],
    BRPC_SERVER_READY,
    ROOT,
  )
  : null;

async function cell(rt: string, root: string, depth: number): Promise<Cell> {
  const srv = brpc !== null ? { ...brpc, stop: async () => {} } : await startServe(
    verbusCli(rt, root, ["serve", "--port", "0", "--fabric", "shm", "--json"]),
    root,
  );
  try {
    const cli: [string, string[]] = rt === "deno"
      ? [RUNTIME_BIN.deno, [
        "run",
        "-A",
        "--config",
        join(root, "deno.json"),
        join(root, "bench/ubring/client.ts"),
      ]]
      : [RUNTIME_BIN.bun, [join(root, "bench/ubring/client.ts")]];
    cli[1].push("--mode", MODE, "--port", String(srv.port), "--depth", String(depth));
    cli[1].push("--attachment", String(ATTACHMENT), "--seconds", String(SECONDS));
    const u0 = procUsage(srv.pid, { switches: false });
    const j = await childJson(cli, root, (SECONDS + 60) * 1000) as Record<string, unknown>;
    const u1 = procUsage(srv.pid, { switches: false });
    const paths = j.paths as Record<string, number> | undefined;
    const all = paths ? Object.values(paths).reduce((a, b) => a + b, 0) : Number(j.calls);
    return {
      callsPerSec: Number(j.callsPerSec),
      p50Us: Number(j.p50Us),
      clientCpuUs: Number(j.cpuUsPerCall),
      serverCpuUs: Math.round((u1.user + u1.sys - u0.user - u0.sys) * 1000 / Math.max(1, all)),
      paths,
    };
  } finally {
    await srv.stop();
  }
}

const load0 = loadavg()[0].toFixed(2);
const results: { rt: string; depth: number; side: number; round: number; cell: Cell }[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const rt of RUNTIMES) {
      for (const depth of DEPTHS) {
        for (const side of round % 2 ? [1, 0] : [0, 1]) {
          const c = await cell(rt, SIDES[side].root, depth);
          results.push({ rt, depth, side, round, cell: c });
          console.error(`round ${round} ${rt} d=${depth} ${"AB"[side]}: ${JSON.stringify(c)}`);
        }
      }
    }
  }
} finally {
  await brpc?.stop();
  trees.close();
}
const load1 = loadavg()[0].toFixed(2);
const lines = [
  `A: ${SIDES[0].label}`,
  `B: ${SIDES[1].label}`,
  `${
    MODE === "ubring" ? "verbus → stock brpc over UBRing" : "verbus ↔ verbus over shm"
  }; ${ROUNDS} rounds × ${SECONDS} s, attachment ${ATTACHMENT} B echoed; load average ${load0} before, ${load1} after`,
  "| runtime | depth | side | calls/s | p50 µs | client CPU µs/call | server CPU µs/call | paths (last round) |",
  "|---|---:|---|---:|---:|---:|---:|---|",
];
const ratios: string[] = [];
for (const rt of RUNTIMES) {
  for (const depth of DEPTHS) {
    const of = (side: number) =>
      results.filter((r) => r.rt === rt && r.depth === depth && r.side === side);
    for (const side of [0, 1]) {
      const rs = of(side).map((r) => r.cell);
      const m = (k: keyof Cell) => Math.round(median(rs.map((c) => c[k] as number)));
      const paths = Object.entries(rs.at(-1)?.paths ?? {}).filter(([, n]) => n > 0)
        .map(([p, n]) => `${p} ${n}`).join(", ");
      lines.push(
        `| ${rt} | ${depth} | ${"AB"[side]} | ${m("callsPerSec")} | ${m("p50Us")} | ${
          m("clientCpuUs")
        } | ${m("serverCpuUs")} | ${paths} |`,
      );
    }
    const a = of(0), b = of(1);
    const ratio = median(a.map((r, i) => b[i].cell.callsPerSec / r.cell.callsPerSec));
    ratios.push(`${rt} depth ${depth}: B/A calls/s median of per-round ratios ${ratio.toFixed(2)}`);
  }
}
const text = [...lines, "", ...ratios].join("\n");
console.log(text);
if (OUT) writeFileSync(OUT, JSON.stringify({ lines: text, results }, null, 2) + "\n");
