/**
 * The CPU-per-call part of the e2e report: the rows at 32 in flight (1 and {@link CLIENTS}
 * clients; verbus TCP, verbus shm and the promise-per-call ring) carry µs of CPU per call of the
 * clients and of the server (`cpu_rows.ts`); this builds the ratios of one round (shm ÷ TCP —
 * issue 35's target ≤ 0.33 —, ring ÷ TCP, shm ÷ ring), their median over the rounds, and the
 * markdown section. Ratios are taken within a round, as `report.ts` does for calls/s.
 * @module
 */
import { median } from "../common/median.ts";
import {
  CLIENTS,
  eachRound,
  medianOverRounds,
  type RoundRatios,
  roundsOf,
  type Row,
  type Target,
  targetOf,
  targetTable,
} from "./report.ts";

const TCP = "verbus TCP", SHM = "verbus shm", RING = "shm ring (promise per call)";

/** µs of CPU per call of a row, both sides (null when a side was not measured). */
export function cpuTotal(r: Row | undefined): number | null {
  if (!r || typeof r.cpu_client_us !== "number" || typeof r.cpu_server_us !== "number") {
    return null;
  }
  return +(r.cpu_client_us + r.cpu_server_us).toFixed(3);
}

/** The case name of the rows of `clients` clients × 32 in flight. */
const caseOf = (clients: number) => clients > 1 ? `ECHO 64 B, ${clients} clients` : "ECHO 64 B";

/** The CPU ratios of one round's rows, keyed `"deno 4 × 32"` → `{shm_vs_tcp_cpu, …}`. */
export function cpuRoundRatios(rows: Row[]): RoundRatios {
  const total = (rt: string, clients: number, system: string) =>
    cpuTotal(
      rows.find((r) =>
        r.runtime === rt && r.case === caseOf(clients) && r.system === system && r.inflight === 32
      ),
    );
  const ratio = (a: number | null, b: number | null) =>
    a !== null && b !== null && b > 0 ? +(a / b).toFixed(2) : null;
  const out: Record<string, Record<string, number | null>> = {};
  for (const rt of ["deno", "bun"]) {
    for (const clients of [1, CLIENTS]) {
      const tcp = total(rt, clients, TCP), shm = total(rt, clients, SHM);
      const ring = total(rt, clients, RING);
      out[`${rt} ${clients} × 32`] = {
        shm_vs_tcp_cpu: ratio(shm, tcp),
        ring_vs_tcp_cpu: ratio(ring, tcp),
        shm_vs_ring_cpu: ratio(shm, ring),
      };
    }
  }
  return out;
}

/** Issue 35's target, shm ÷ TCP CPU per call ≤ 0.33 at 1 × 32 and {@link CLIENTS} × 32: the median over the rounds. */
export function cpuTargets(rows: Row[]): Target[] {
  const per = eachRound(rows, cpuRoundRatios);
  const out: Target[] = [];
  for (const rt of ["deno", "bun"]) {
    for (const clients of [1, CLIENTS]) {
      const perRound = per.map((s) => s[`${rt} ${clients} × 32`]?.shm_vs_tcp_cpu ?? null);
      out.push(targetOf(
        `shm ÷ verbus TCP CPU per call (clients + server), ${clients} × 32`,
        rt,
        perRound,
        "≤ 0.33",
        (v) => v <= 0.33,
      ));
    }
  }
  return out;
}

/** The CPU rows: per (runtime, clients, system) the median over the rounds of each side. */
export function cpuRows(rows: Row[]): {
  runtime: string;
  clients: number;
  system: string;
  client_us: number;
  server_us: number;
  total_us: number;
  /** The kernel's part of the total (null: not reported). */
  kernel_share: number | null;
  qps: number;
  perRound: number[];
}[] {
  const out = [];
  for (const rt of ["deno", "bun"]) {
    for (const clients of [1, CLIENTS]) {
      for (const system of [TCP, SHM, RING]) {
        const g = rows.filter((r) =>
          r.runtime === rt && r.case === caseOf(clients) && r.system === system &&
          r.inflight === 32 && cpuTotal(r) !== null
        );
        if (g.length === 0) continue;
        const m = (f: (r: Row) => number) => +median(g.map(f)).toFixed(3);
        out.push({
          runtime: rt,
          clients,
          system,
          client_us: m((r) => r.cpu_client_us!),
          server_us: m((r) => r.cpu_server_us!),
          total_us: m((r) => cpuTotal(r)!),
          kernel_share: g.every((r) => typeof r.cpu_client_kernel_us === "number")
            ? +median(
              g.map((r) =>
                (r.cpu_client_kernel_us! + (r.cpu_server_kernel_us ?? 0)) / cpuTotal(r)!
              ),
            ).toFixed(2)
            : null,
          qps: Math.round(median(g.map((r) => r.qps))),
          perRound: g.map((r) => cpuTotal(r)!),
        });
      }
    }
  }
  return out;
}

/** Each ratio of {@link cpuRoundRatios}: the median over the rounds (null where no round had it). */
export function cpuRatios(rows: Row[]): RoundRatios {
  return medianOverRounds(eachRound(rows, cpuRoundRatios));
}

/** The markdown section "CPU per call": the target, the rows, the ratios. */
export function cpuMarkdown(rows: Row[]): string {
  const fmt = (x: number | null) => (x === null ? "—" : String(x));
  const rounds = roundsOf(rows).length;
  return [
    "## CPU per call (issue 35)",
    "",
    "µs of CPU (user + kernel, all threads) per call at 32 in flight per client: the clients' own " +
    "CPU over their measured calls (getrusage) and the server's over the same window " +
    "(/proc/PID/stat), divided by the calls the clients counted." +
    (rounds > 1 ? ` Median over ${rounds} rounds (each round's total in brackets).` : ""),
    "",
    ...targetTable(cpuTargets(rows), rounds),
    "",
    "| runtime | clients × in flight | system | clients µs/call | server µs/call | total µs/call | kernel share | calls/s |",
    "|---|---|---|---|---|---|---|---|",
    ...cpuRows(rows).map((r) =>
      `| ${r.runtime} | ${r.clients} × 32 | ${r.system} | ${r.client_us} | ${r.server_us} | ${r.total_us}${
        rounds > 1 ? ` (${r.perRound.join(", ")})` : ""
      } | ${fmt(r.kernel_share)} | ${r.qps} |`
    ),
    "",
    "| CPU per call ratio (median over the rounds of each round's) | value |",
    "|---|---|",
    ...Object.entries(cpuRatios(rows)).flatMap(([k, v]) =>
      Object.entries(v).map(([k2, v2]) => `| ${k}: ${k2} | ${fmt(v2)} |`)
    ),
  ].join("\n");
}
