/**
 * Issue 11's VM table from what bench/vm/verbs_bench.sh measured in one VM session: reads
 * build/bench/verbs-<runtime>.json (this tree) and, when present, before-verbs-<runtime>.json
 * (the same bench run from another checkout in the same VM session, alternating with this one),
 * and writes bench/results/vm.md and vm.json. Ratios only: the VM is emulated (qemu TCG).
 *
 *   deno run -A bench/vm/vm_report.ts
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { median } from "../common/median.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const BUILD = join(ROOT, "build/bench");

// deno-lint-ignore no-explicit-any
type Run = any;

function load(name: string): Run | null {
  const p = join(BUILD, name);
  return existsSync(p) ? JSON.parse(readFileSync(p, "utf8")) : null;
}

/**
 * `case` ÷ TCP at 16 in flight: the median of the per-round ratios where the run interleaved
 * rounds (`vsTcpRounds`), else (an older tree's run) the ratio of the two figures.
 */
function vsTcp(r: Run, c: Run): number {
  return c.vsTcpRounds ? median(c.vsTcpRounds) : c.callsPerSec / r.tcp.callsPerSec;
}

/** The three targets of issue 11 for one run (client mode poll or event), and the shm floor. */
function figures(r: Run, mode: "poll" | "event") {
  const w2 = 2 * r.perftest.write_lat_64.typical, rd = r.perftest.read_lat_64k.typical;
  const v = r[`verbs_${mode}`];
  return {
    eager_p50_us: v.echo.p50,
    eager_p99_us: v.echo.p99 ?? null,
    eager_vs_2x_write_lat: v.echo.p50 / w2,
    calls_per_s_16: v.callsPerSec,
    tcp_calls_per_s_16: r.tcp.callsPerSec,
    calls_vs_tcp: vsTcp(r, v),
    shm_calls_per_s_16: r.shm?.callsPerSec ?? null,
    shm_vs_tcp: r.shm ? vsTcp(r, r.shm) : null,
    lazy_64k_p50_us: v.large.p50,
    lazy_vs_read_lat: v.large.p50 / rd,
    endpoint_pingpong_vs_2x_write_lat: r.endpoint.p50 / w2,
  };
}

const out: Record<string, unknown> = {};
const md: string[] = [
  "# verbs in the Soft-RoCE VM (issue 11's VM targets)",
  "",
  "qemu TCG emulation on a shared 2-core host: only the ratios mean anything, and they move",
  "with the host's load (perftest ran in the same VM session, just before). `before` is the same",
  "bench from the checkout named in vm.json, run in the same VM session, alternating with `after`.",
  "Calls/s at 16 in flight: median of per-round ratios (verbs, TCP and shm interleaved per round).",
  "`shm ÷ TCP` is ECHO over shared memory between the same two processes' runtimes in this VM:",
  "no fabric at all, so it is the most any fabric can reach here (the JS floor of a call under",
  "TCG emulation); `—`: the tree's bench did not measure it.",
  "",
  "| runtime | client mode | tree | EAGER p50 ÷ 2×ib_write_lat (≤ 3×) | calls/s at 16 ÷ verbus TCP (≥ 2×) | shm at 16 ÷ verbus TCP (the floor) | LARGE_GET 64 KiB LAZY ÷ ib_read_lat (≤ 1.5×) | endpoint ping-pong ÷ 2×ib_write_lat |",
  "|---|---|---|---|---|---|---|---|",
];
const x = (v: number) => `${v.toFixed(2)}×`;
for (const rt of ["deno", "bun"]) {
  for (
    const [tree, file] of [["before", `before-verbs-${rt}.json`], ["after", `verbs-${rt}.json`]]
  ) {
    const r = load(file);
    if (!r) continue;
    for (const mode of ["poll", "event"] as const) {
      const f = figures(r, mode);
      out[`${rt}.${mode}.${tree}`] = { ...f, perftest: r.perftest };
      md.push(
        `| ${rt} | ${mode} | ${tree} | ${x(f.eager_vs_2x_write_lat)} | ${x(f.calls_vs_tcp)} | ${
          f.shm_vs_tcp === null ? "—" : x(f.shm_vs_tcp)
        } | ${x(f.lazy_vs_read_lat)} | ${x(f.endpoint_pingpong_vs_2x_write_lat)} |`,
      );
    }
  }
}
md.push("", "Raw figures (µs, calls/s) are in vm.json.", "");
out.before_tree = process.env.VERBS_BENCH_BEFORE ?? null;
const dir = join(ROOT, "bench/results");
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, "vm.json"), JSON.stringify(out, null, 2));
writeFileSync(join(dir, "vm.md"), md.join("\n"));
console.log(md.join("\n"));
