/**
 * The end-to-end benchmark's report (`run.ts` collects the rows): the ratios of one round, issue
 * 11's targets, and the markdown of `bench/results/e2e.md`.
 *
 * A run has one or more rounds; a round measures every row once, and the ratios and targets are
 * computed per round — from rows measured minutes apart, never across rounds — then reported as
 * the median over the rounds with each round's value beside it. On a shared 2-core machine one
 * round's rows swing by 2× between runs (shm at 32 in flight read 0.61M and 1.58M calls/s on Bun in
 * two runs of one day), so one round's verdict on a target is noise.
 * @module
 */

import { median } from "../common/median.ts";

/** One measured row. */
export interface Row {
  runtime: string;
  case: string;
  system: string;
  inflight: number;
  /** Mean latency, µs (beside the quantiles it shows a bimodal distribution); absent: not measured. */
  mean_us?: number;
  p50_us: number;
  p99_us: number;
  /** The 99.9th percentile, µs; absent: not measured. */
  p999_us?: number;
  qps: number;
  path?: string;
  /** µs of CPU (user + kernel) per call of the clients (rows at 32 in flight; `cpu_rows.ts`). */
  cpu_client_us?: number | null;
  /** µs of CPU (user + kernel) per call of the server over the same calls. */
  cpu_server_us?: number | null;
  /** The kernel's part of {@link cpu_client_us} and {@link cpu_server_us}. */
  cpu_client_kernel_us?: number | null;
  cpu_server_kernel_us?: number | null;
  /** The round it was measured in (0-based). */
  round: number;
}

/** One of issue 11's targets: the median over the rounds, and each round's value. */
export interface Target {
  target: string;
  runtime: string;
  value: number | null;
  perRound: (number | null)[];
  goal: string;
  met: boolean | null;
}

/** The clients of the "N clients × 32" rows. */
export const CLIENTS = 4;

/** The ratios of one round's rows, keyed like `"deno ECHO inflight 32"` → `{shm_vs_tcp_qps}`. */
export function roundSummary(rows: Row[]): Record<string, Record<string, number | null>> {
  const find = (rt: string, c: string, s: string, w: number) =>
    rows.find((r) => r.runtime === rt && r.case === c && r.system === s && r.inflight === w);
  const ratio = (a?: Row, b?: Row) => a && b ? +(a.qps / b.qps).toFixed(2) : null;
  const out: Record<string, Record<string, number | null>> = {};
  for (const rt of ["deno", "bun"]) {
    for (const w of [1, 32]) {
      const tcp = find(rt, "ECHO 64 B", "verbus TCP", w),
        shm = find(rt, "ECHO 64 B", "verbus shm", w),
        pp = find(rt, "ECHO 64 B", "shm ping-pong (u32)", 1);
      out[`${rt} ECHO inflight ${w}`] = {
        tcp_vs_grpc_qps: ratio(tcp, find("node", "ECHO 64 B", "grpc-js", w)),
        tcp_vs_raw_tcp_qps: ratio(tcp, find(rt, "ECHO 64 B", "raw TCP echo", w)),
        shm_vs_tcp_qps: ratio(shm, tcp),
        shm_p50_vs_tcp_p50: shm && tcp ? +(tcp.p50_us / shm.p50_us).toFixed(2) : null,
        shm_p50_vs_pingpong_p50: shm && pp ? +(shm.p50_us / pp.p50_us).toFixed(1) : null,
        shm_vs_ring_qps: ratio(shm, find(rt, "ECHO 64 B", "shm ring (promise per call)", w)),
      };
    }
    const c4 = `ECHO 64 B, ${CLIENTS} clients`;
    out[`${rt} ECHO ${CLIENTS} clients × 32`] = {
      shm_vs_tcp_qps: ratio(find(rt, c4, "verbus shm", 32), find(rt, c4, "verbus TCP", 32)),
    };
    for (const c of ["LARGE_GET 64 KiB", "BIGPUT 16 KiB"]) {
      out[`${rt} ${c}`] = {
        shm_vs_tcp_qps: ratio(find(rt, c, "verbus shm", 1), find(rt, c, "verbus TCP", 1)),
      };
    }
  }
  return out;
}

/** Ratios of one round: `{ [row key]: { [ratio name]: value (null: a row missing) } }`. */
export type RoundRatios = Record<string, Record<string, number | null>>;

/** The rounds present in `rows`, in order. */
export function roundsOf(rows: Row[]): number[] {
  return [...new Set(rows.map((r) => r.round))].sort((a, b) => a - b);
}

/** `ratiosOf` applied to each round's rows on its own, in round order. */
export function eachRound(rows: Row[], ratiosOf: (round: Row[]) => RoundRatios): RoundRatios[] {
  return roundsOf(rows).map((k) => ratiosOf(rows.filter((r) => r.round === k)));
}

/** Each ratio of {@link roundSummary}: the median over the rounds (null where no round had it). */
export function summary(rows: Row[]): RoundRatios {
  return medianOverRounds(eachRound(rows, roundSummary));
}

/** Each ratio of the first round's keys: the median over the rounds `per` (null where none had it). */
export function medianOverRounds(per: RoundRatios[]): RoundRatios {
  const out: RoundRatios = {};
  for (const [key, fields] of Object.entries(per[0] ?? {})) {
    out[key] = {};
    for (const f of Object.keys(fields)) {
      const xs = per.map((s) => s[key]?.[f]).filter((x): x is number => typeof x === "number");
      out[key][f] = xs.length ? +median(xs).toFixed(2) : null;
    }
  }
  return out;
}

/**
 * A target whose round values are `perRound`: the median of those measured (2 decimals), met when
 * `ok` holds for it (null: no round measured it).
 */
export function targetOf(
  target: string,
  runtime: string,
  perRound: (number | null)[],
  goal: string,
  ok: (v: number) => boolean,
): Target {
  const xs = perRound.filter((x): x is number => x !== null);
  const value = xs.length ? +median(xs).toFixed(2) : null;
  return { target, runtime, value, perRound, goal, met: value === null ? null : ok(value) };
}

/** The markdown table of `ts` (each round's value in brackets when there were `rounds` > 1). */
export function targetTable(ts: Target[], rounds: number): string[] {
  const fmt = (x: number | null) => (x === null ? "—" : String(x));
  return [
    "| target | runtime | value | goal | met |",
    "|---|---|---|---|---|",
    ...ts.map((t) =>
      `| ${t.target} | ${t.runtime} | ${fmt(t.value)}${
        rounds > 1 ? ` (${t.perRound.map(fmt).join(", ")})` : ""
      } | ${t.goal} | ${t.met === null ? "—" : t.met ? "yes" : "no"} |`
    ),
  ];
}

/** Issue 11's targets, each a ratio of one round's rows; median over the rounds. */
export function targets(rows: Row[]): Target[] {
  const per = eachRound(rows, roundSummary);
  const spec: [string, string, string, string, (v: number) => boolean][] = [
    [
      "shm EAGER p50 at 1 in flight ÷ shm ping-pong p50",
      "ECHO inflight 1",
      "shm_p50_vs_pingpong_p50",
      "≤ 3",
      (v) => v <= 3,
    ],
    [
      "shm ÷ verbus TCP calls/s, 32 in flight",
      "ECHO inflight 32",
      "shm_vs_tcp_qps",
      "≥ 3",
      (v) => v >= 3,
    ],
    [
      `shm ÷ verbus TCP calls/s, ${CLIENTS} clients × 32`,
      `ECHO ${CLIENTS} clients × 32`,
      "shm_vs_tcp_qps",
      "≥ 3",
      (v) => v >= 3,
    ],
    [
      "shm ÷ promise-per-call shm ring calls/s, 32 in flight",
      "ECHO inflight 32",
      "shm_vs_ring_qps",
      "≥ 0.25",
      (v) => v >= 0.25,
    ],
    [
      "verbus TCP ÷ raw TCP echo calls/s, 32 in flight",
      "ECHO inflight 32",
      "tcp_vs_raw_tcp_qps",
      "≥ 0.5",
      (v) => v >= 0.5,
    ],
  ];
  const out: Target[] = [];
  for (const rt of ["deno", "bun"]) {
    for (const [target, key, field, goal, ok] of spec) {
      const perRound = per.map((s) => s[`${rt} ${key}`]?.[field] ?? null);
      out.push(targetOf(target, rt, perRound, goal, ok));
    }
  }
  return out;
}

/** `{ [key]: the median over the rounds }` when every round measured `key`, else `{}`. */
function optionalMedian(key: "mean_us" | "p999_us", g: Row[]): Partial<Row> {
  const xs = g.map((r) => r[key]);
  return xs.every((x) => typeof x === "number")
    ? { [key]: +median(xs as number[]).toFixed(2) }
    : {};
}

/** One row per (runtime, case, system, in flight): the median over the rounds, and the spread. */
export function medianRows(
  rows: Row[],
): (Omit<Row, "round"> & { rounds: number; qpsMin: number; qpsMax: number })[] {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const k = `${r.runtime}|${r.case}|${r.system}|${r.inflight}`;
    const g = groups.get(k);
    if (g) g.push(r);
    else groups.set(k, [r]);
  }
  return [...groups.values()].map((g) => ({
    runtime: g[0].runtime,
    case: g[0].case,
    system: g[0].system,
    inflight: g[0].inflight,
    path: g[0].path,
    ...optionalMedian("mean_us", g),
    p50_us: +median(g.map((r) => r.p50_us)).toFixed(2),
    p99_us: +median(g.map((r) => r.p99_us)).toFixed(2),
    ...optionalMedian("p999_us", g),
    qps: Math.round(median(g.map((r) => r.qps))),
    rounds: g.length,
    qpsMin: Math.min(...g.map((r) => r.qps)),
    qpsMax: Math.max(...g.map((r) => r.qps)),
  }));
}

/** The markdown report: `header` (what ran), the targets, the median rows, the ratios. */
export function markdown(rows: Row[], header: string): string {
  const rounds = roundsOf(rows).length;
  const fmt = (x: number | null) => (x === null ? "—" : String(x));
  return [
    header,
    "",
    "## Targets (issue 11)",
    "",
    rounds > 1
      ? `Each value is the median over ${rounds} rounds of its ratio within one round (each round's value in brackets).`
      : "One round: each value is the ratio of two rows of this run.",
    "",
    ...targetTable(targets(rows), rounds),
    "",
    "## Rows",
    "",
    rounds > 1
      ? `Median over ${rounds} rounds; calls/s of the slowest and the fastest round beside it.`
      : "",
    "",
    `| runtime | case | system | path | in flight | mean µs | p50 µs | p99 µs | p99.9 µs | calls/s |${
      rounds > 1 ? " min–max calls/s |" : ""
    }`,
    `|---|---|---|---|---|---|---|---|---|---|${rounds > 1 ? "---|" : ""}`,
    ...medianRows(rows).map((r) =>
      `| ${r.runtime} | ${r.case} | ${r.system} | ${r.path ?? ""} | ${r.inflight} | ${
        r.mean_us ?? "—"
      } | ${r.p50_us} | ` +
      `${r.p99_us} | ${r.p999_us ?? "—"} | ${r.qps} |${
        rounds > 1 ? ` ${r.qpsMin}–${r.qpsMax} |` : ""
      }`
    ),
    "",
    "## Ratios",
    "",
    rounds > 1 ? "Median over the rounds of each round's ratio." : "",
    "",
    "| ratio | value |",
    "|---|---|",
    ...Object.entries(summary(rows)).flatMap(([k, v]) =>
      Object.entries(v).map(([k2, v2]) => `| ${k}: ${k2} | ${fmt(v2)} |`)
    ),
  ].join("\n");
}
