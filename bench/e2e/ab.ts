/**
 * A/B of two versions of verbus on this machine, in alternating rounds (the machine is shared and
 * noisy: only side-by-side ratios mean anything). Per round and case it starts a server of A and
 * drives it with a client of A (`verbus serve` / `verbus call --async-bench`, same runtime), then
 * the same for B; prints per case the median calls/s and p50 of each side and the medians of the
 * per-round B/A ratios (calls/s and p50), and µs of CPU per call (user + kernel) of the clients
 * and of the server with the median per-round B/A ratio of their sum: the clients start their
 * measured calls together (`--async-sync`) and report their own CPU; the server's is read from
 * `/proc/PID/stat` over the same window (`cpu_rows.ts`, as the e2e CPU rows).
 *
 *   deno run -A bench/e2e/ab.ts [--a HEAD] [--b .] [--runtime deno|bun|both] [--rounds 5]
 *       [--calls 20000] [--warmup 5000] [--windows 1,32] [--fabric shm|tcp] [--clients 1]
 *       [--out FILE.json]
 *
 * A side is a directory (a checkout, run as it is: `.` is this work tree with its uncommitted
 * changes) or a git revision of this repository (`HEAD`, `HEAD~1`, a commit, a branch): its files
 * are extracted into a temporary directory, with this checkout's node_modules and its own C
 * helper (`bench/common/revision_tree.ts`), and removed at the end. Default: `--a HEAD --b .`,
 * what the uncommitted changes do. `--a X --b X` (an A/A run) measures the noise floor.
 *
 * `--clients N`: N client processes at once per side (calls/s summed, p50 the median of theirs).
 * `--fabric tcp`: verbus's TCP path (baidu_std), as the e2e "verbus TCP" rows.
 * `--warmup N`: calls every measured client process makes first, left out of its figures
 * (`--async-warmup`; JIT tiers up, as the e2e rows do), after a separate warm-up client per round.
 * @module
 */
import { type ServerProcess, startServe } from "../../cli/self.ts";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { arg, numArg, runtimesArg } from "../common/args.ts";
import { asyncBenchArgs } from "../common/bench_call.ts";
import { childJson } from "../common/child_json.ts";
import { median } from "../common/median.ts";
import { RevisionTrees, type Side } from "../common/revision_tree.ts";
import { verbusCli } from "../common/verbus_cli.ts";
import { cpuPerCall, runSynced } from "./cpu_rows.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const trees = new RevisionTrees(ROOT);
const [SIDE_A, SIDE_B] = sides();
const A = SIDE_A.root, B = SIDE_B.root;
console.error(`A: ${SIDE_A.label}\nB: ${SIDE_B.label}`);
const RUNTIMES = runtimesArg();
const ROUNDS = numArg("rounds", 5), CALLS = numArg("calls", 20000);
const WARMUP = numArg("warmup", 5000);
const WINDOWS = arg("windows", "1,32").split(",").map(Number);
const FABRIC = arg("fabric", "shm");
const CLIENTS = Math.max(1, numArg("clients", 1));
const cmd = verbusCli;

function serve(rt: string, root: string): Promise<ServerProcess> {
  const [bin, a] = cmd(rt, root, ["serve", "--port", "0", "--json"]);
  return startServe([bin, a], root);
}

type Result = { qps: number; p50_us: number; cpu_client_us: number; cpu_server_us: number };

function clientCmd(rt: string, root: string, port: number, w: number, n: number, sync: boolean) {
  return cmd(
    rt,
    root,
    asyncBenchArgs({
      port,
      fabric: FABRIC,
      op: "echo",
      bytes: 64,
      window: w,
      calls: n,
      warmup: WARMUP,
      sync,
    }),
  );
}

function client(rt: string, root: string, port: number, w: number, n: number): Promise<unknown> {
  return childJson(clientCmd(rt, root, port, w, n, false), root).then((j) => {
    if (!j.ok) throw new Error(`client failed: ${JSON.stringify(j)}`);
    return j.result;
  });
}

/**
 * `CLIENTS` clients started together (`--async-sync`): calls/s summed, p50 the median of theirs,
 * CPU per call of the clients and of the server (`server` its pid) over the measured window.
 */
async function clients(
  rt: string,
  root: string,
  server: ServerProcess,
  w: number,
  n: number,
): Promise<Result> {
  const cmds = Array.from(
    { length: CLIENTS },
    () => clientCmd(rt, root, server.port, w, n, true),
  );
  const { results, server: cpu } = await runSynced(cmds, server.pid, root);
  for (const r of results) {
    if (!r.ok) throw new Error(`client failed: ${JSON.stringify(r)}`);
  }
  const per = cpuPerCall(results, cpu);
  const rs = results.map((r) => r.result as { qps: number; p50_us: number });
  return {
    qps: rs.reduce((a, r) => a + r.qps, 0),
    p50_us: median(rs.map((r) => r.p50_us)),
    cpu_client_us: per.cpu_client_us ?? NaN,
    cpu_server_us: per.cpu_server_us ?? NaN,
  };
}

/** Both sides; a side that cannot be made removes what the other left in the temporary directory. */
function sides(): [Side, Side] {
  try {
    return [trees.side(arg("a", "HEAD")), trees.side(arg("b", ROOT))];
  } catch (e) {
    trees.close();
    throw e;
  }
}

const out: Record<string, unknown>[] = [];
try {
  await measure();
} finally {
  trees.close();
}

async function measure(): Promise<void> {
  for (const rt of RUNTIMES) {
    for (const w of WINDOWS) {
      const qa: number[] = [], qb: number[] = [], pa: number[] = [], pb: number[] = [];
      const ratio: number[] = [], p50Ratio: number[] = [];
      const ca: number[] = [], cb: number[] = [], cpuRatio: number[] = [];
      const cpuOf = (x: Result) => x.cpu_client_us + x.cpu_server_us;
      for (let r = 0; r < ROUNDS; r++) {
        // Keyed by side, not by path: `--a X --b X` (an A/A run, the noise floor) measures X twice.
        const order = r % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const);
        const none = { qps: NaN, p50_us: NaN, cpu_client_us: NaN, cpu_server_us: NaN };
        const res: Record<"A" | "B", Result> = { A: none, B: none };
        for (const side of order) {
          const root = side === "A" ? A : B;
          const s = await serve(rt, root);
          try {
            await client(rt, root, s.port, w, Math.min(2000, CALLS)); // warm-up
            res[side] = await clients(rt, root, s, w, CALLS);
          } finally {
            await s.stop();
          }
        }
        qa.push(res.A.qps), qb.push(res.B.qps), pa.push(res.A.p50_us), pb.push(res.B.p50_us);
        ratio.push(res.B.qps / res.A.qps), p50Ratio.push(res.B.p50_us / res.A.p50_us);
        ca.push(cpuOf(res.A)), cb.push(cpuOf(res.B)), cpuRatio.push(cpuOf(res.B) / cpuOf(res.A));
        const cpuText = (x: Result) =>
          `${cpuOf(x).toFixed(3)} (${x.cpu_client_us} + ${x.cpu_server_us})`;
        console.error(
          `${rt} w=${w} round ${r}: A ${res.A.qps} B ${res.B.qps} calls/s, ` +
            `p50 A ${res.A.p50_us} B ${res.B.p50_us} µs, CPU µs/call A ${cpuText(res.A)} ` +
            `B ${cpuText(res.B)} (load ${loadavg()[0].toFixed(2)})`,
        );
      }
      const row = {
        runtime: rt,
        inflight: w,
        a_qps: median(qa),
        b_qps: median(qb),
        a_p50_us: median(pa),
        b_p50_us: median(pb),
        b_over_a_qps: +median(ratio).toFixed(2),
        b_over_a_p50: +median(p50Ratio).toFixed(2),
        rounds_b_over_a_qps: ratio.map((x) => +x.toFixed(2)),
        a_cpu_us: +median(ca).toFixed(3),
        b_cpu_us: +median(cb).toFixed(3),
        b_over_a_cpu: +median(cpuRatio).toFixed(2),
        rounds_b_over_a_cpu: cpuRatio.map((x) => +x.toFixed(2)),
      };
      out.push(row);
      console.log(JSON.stringify(row));
    }
  }
}
const file = arg("out", "");
if (file) {
  writeFileSync(
    file,
    JSON.stringify(
      {
        a: SIDE_A.label,
        b: SIDE_B.label,
        fabric: FABRIC,
        clients: CLIENTS,
        rounds: ROUNDS,
        calls: CALLS,
        warmup: WARMUP,
        load_at_end: loadavg(),
        rows: out,
      },
      null,
      2,
    ) + "\n",
  );
}
