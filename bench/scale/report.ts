/**
 * The scale benchmark's report: the result types `run.ts` collects and the markdown it writes
 * (`bench/results/scale.md`). Ratios are against the 10-session figure of the same runtime in the
 * same run.
 * @module
 */

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** What one (runtime, session count) run produced; phases missing if it did not get there. */
export interface CountResult {
  runtime: string;
  sessions: number;
  /** "ok", or what did not finish and how far it got. */
  status: string;
  seconds?: number;
  /** 1-minute load average when the count started (the machine is shared). */
  loadavg1?: number;
  clientExit?: number | string;
  setup?: Json;
  serverAfterSetup?: Json;
  echo?: Json;
  /** The ECHO phase again after the idle windows (every session idled for them). */
  echoIdle?: Json;
  idle?: Json;
  /** The idle window after `--settle-ms` more of idling (absent without it). */
  idleSettled?: Json;
  wake?: Json;
  /** Sessions the client had at 0 s, 10 s, 20 s, … (from its progress lines). */
  setupCurve?: number[];
  warnings?: Json;
  shmSwept?: number;
  clientStderr?: string;
  serverStderr?: string;
}

/** The whole run (`scale.json`). */
export interface Report {
  date: string;
  /** The verbus commit measured. */
  commit: string;
  root: string;
  fabric: string;
  machine: string;
  fdLimit: string;
  maxSeconds: number;
  versions: Record<string, string>;
  note: string;
  results: CountResult[];
}

const f = (x: unknown, digits = 1): string =>
  typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits).replace(/\.0+$/, "") : "–";
const ratio = (a: unknown, b: unknown): string =>
  typeof a === "number" && typeof b === "number" && b > 0 && Number.isFinite(a)
    ? `${(a / b).toFixed(2)}×`
    : "–";
const mib = (kib: unknown) => (typeof kib === "number" ? kib / 1024 : undefined);

function row(r: CountResult): string {
  const s = r.serverAfterSetup, su = r.setup, e = r.echo, i = r.idle, w = r.wake, ei = r.echoIdle;
  const reached = su ? `${su.reached}${su.complete ? "" : " (partial)"}` : "–";
  return `| ${r.sessions} | ${reached} | ${f(su?.seconds, 2)} | ${f(su?.sessionsPerS, 0)} | ` +
    `${f(su?.serverCpuMsPerSession, 2)} / ${f(su?.clientCpuMsPerSession, 2)} | ` +
    `${f(e?.p50Us)} | ${f(e?.p99Us)} | ${f(e?.bestRoundP50Us)} | ${f(ei?.p50Us)} | ` +
    `${f(ei?.p99Us)} | ${f(mib(s?.rssKiB), 0)} | ` +
    `${f(s?.externalMiB, 0)} | ${f(s?.threads, 0)} | ` +
    `${f(s?.fds, 0)} | ${f(i?.serverCpuPct)} | ${f(r.idleSettled?.serverCpuPct)} | ` +
    `${f(i?.clientCpuPct)} | ${f(w?.totalMs, 0)}` +
    `${w && !w.complete ? ` (${w.answered})` : ""} | ${f(w?.p50Us)} | ${f(w?.p99Us)} | ` +
    `${f((w?.maxUs ?? NaN) / 1000)} |`;
}

const g = (x: CountResult, path: string) =>
  path.split(".").reduce((o: Json | undefined, k) => o?.[k], x as unknown as Json);

function ratioRow(r: CountResult, b: CountResult): string {
  const cols = [
    "echo.p50Us",
    "echo.p99Us",
    "echo.bestRoundP50Us",
    "echoIdle.p50Us",
    "echoIdle.p99Us",
    "setup.sessionsPerS",
    "setup.serverCpuMsPerSession",
    "setup.clientCpuMsPerSession",
    "serverAfterSetup.rssKiB",
    "serverAfterSetup.threads",
    "serverAfterSetup.fds",
    "idle.serverCpuPct",
    "wake.p50Us",
    "wake.p99Us",
  ];
  return `| ${r.sessions} | ${cols.map((c) => ratio(g(r, c), g(b, c))).join(" | ")} |`;
}

/** One line of the targets table: what, the figure, the goal, met or not. */
export interface TargetRow {
  target: string;
  value: string;
  goal: string;
  met: boolean | null;
}

/**
 * Issue 10's targets for one runtime, from its largest count that set up every session and its
 * 10-session baseline: ECHO p50 ratio after idling (the steady state) and right after setup,
 * sessions/s, idle server CPU (the settled window when measured), server threads. `met` is null
 * where a figure is missing.
 */
export function targets(rs: CountResult[]): TargetRow[] {
  const base = rs.find((r) => r.sessions === 10 && r.status.startsWith("ok"));
  const top = [...rs].filter((r) => r !== base && r.setup?.complete)
    .sort((a, b) => b.sessions - a.sessions)[0];
  if (!top) return [];
  const n = top.sessions.toLocaleString("en-US");
  const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : NaN);
  const row = (target: string, x: number, goal: string, ok: (x: number) => boolean, unit = "") => ({
    target,
    value: Number.isNaN(x) ? "–" : `${+x.toFixed(2)}${unit}`,
    goal,
    met: Number.isNaN(x) ? null : ok(x),
  });
  const over = (path: string) => base ? num(g(top, path)) / num(g(base, path)) : NaN;
  const idle = top.idleSettled ?? top.idle;
  return [
    row(
      `ECHO p50, ${n} sessions ÷ 10, after idling`,
      over("echoIdle.p50Us"),
      "≤ 1.5×",
      (x) => x <= 1.5,
      "×",
    ),
    row(
      `ECHO p50, ${n} sessions ÷ 10, right after setup`,
      over("echo.p50Us"),
      "(≤ 1.5×)",
      (x) => x <= 1.5,
      "×",
    ),
    row(
      `setup, ${n} sessions`,
      num(top.setup?.sessionsPerS),
      "≥ 1,000 sessions/s",
      (x) => x >= 1000,
      "/s",
    ),
    row(
      `idle server CPU, ${n} sessions${top.idleSettled ? " (settled window)" : ""}`,
      num(idle?.serverCpuPct),
      "< 1 %",
      (x) => x < 1,
      " %",
    ),
    row(
      `server threads, ${n} sessions ÷ 10`,
      over("serverAfterSetup.threads"),
      "1×",
      (x) => x <= 1,
      "×",
    ),
  ];
}

/** The markdown report of a run. */
export function markdown(rep: Report): string {
  const out: string[] = [
    "# verbus scale benchmark (issue 10 item 6)",
    "",
    `${rep.date}; verbus commit **${rep.commit}**; fabric **${rep.fabric}**; ${rep.machine}; ` +
    `${Object.entries(rep.versions).map(([k, v]) => `${k}: ${v}`).join(", ")}.`,
    "",
    "One server process and one client process (same runtime). The client opens N sessions " +
    "(`connect()` each, 64 handshakes at a time), times ECHO 64 B on one of them (1 in flight, " +
    "5,000 calls after 20,000 warm-up; best-round p50: the median of the best of 5 rounds of " +
    "1,000) while the others stay idle — right after the setup, and again after the idle " +
    'windows ("after idling": the steady state, once the runtimes stopped collecting what the ' +
    "setup left behind) — samples the server's CPU with every session idle " +
    'over `--idle-ms` right after the calls ("idle server CPU") and, with `--settle-ms S`, ' +
    'over the same length after S ms more of idling ("… settled": past the one-off collections ' +
    "a runtime makes once activity stops — Bun's GC timer collects every second for ~30 s, " +
    "Deno's memory reducer makes two full collections 25–40 s after the last call), then wakes " +
    "every session in turn with one ECHO. " +
    "The idle samples ask the server for its CPU time only. Server figures " +
    "(VmRSS, Threads, open fds, CPU time) come from the server itself (`bench.Scale/Stats` over a " +
    "separate TCP-only connection). Regions are kept small so that many sessions fit in memory: " +
    "64 slots × 4 KiB, BULK 64 KiB, 4 × 64 KiB object slabs, 64 KiB staging (server maximum and " +
    "client proposal).",
    "",
    "The setup rate at 10 sessions is mostly the first handshake's warm-up: read the absolute " +
    "sessions/s of the larger counts, not their ratio.",
    "",
    `**The machine is shared with other work (2 cores): the figures are noisy; compare ratios ` +
    `within one run, not absolute numbers across runs.** ${rep.fdLimit}. Per-count budget ` +
    `${rep.maxSeconds} s (setup stops opening at 55 % of it; the client is killed after it + 20 s).`,
    ...(rep.note ? ["", rep.note] : []),
  ];
  for (const rt of [...new Set(rep.results.map((r) => r.runtime))]) {
    const rs = rep.results.filter((r) => r.runtime === rt);
    const base = rs.find((r) => r.sessions === 10 && r.status.startsWith("ok"));
    out.push(
      "",
      `## ${rt}`,
      "",
      "| sessions | reached | setup s | sessions/s | setup CPU ms/session (server / client) | " +
        "ECHO p50 µs | ECHO p99 µs | best-round p50 µs | after idling: ECHO p50 µs | p99 µs | " +
        "server RSS MiB | server JS external MiB | " +
        "threads | fds | idle server CPU % | … settled | idle client CPU % | wake-all ms | " +
        "wake p50 µs | wake p99 µs | wake max ms |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...rs.map(row),
      "",
      "Ratios against 10 sessions:",
      "",
      "| sessions | ECHO p50 | ECHO p99 | best-round p50 | after idling: p50 | p99 | sessions/s | " +
        "setup CPU/session server | client | RSS | threads | fds | idle CPU | wake p50 | wake p99 |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...(base ? rs.filter((r) => r !== base).map((r) => ratioRow(r, base)) : ["(no baseline)"]),
      "",
      "Targets (issue 10):",
      "",
      "| target | value | goal | met |",
      "|---|---|---|---|",
      ...targets(rs).map((t) =>
        `| ${t.target} | ${t.value} | ${t.goal} | ${t.met === null ? "–" : t.met ? "yes" : "no"} |`
      ),
      "",
      "Status and what broke:",
      "",
    );
    for (const r of rs) {
      const su = r.setup ?? {};
      const bits = [
        `${r.status} (${r.seconds} s, load ${r.loadavg1})`,
        r.clientExit === "killed" && !r.status.includes("killed")
          ? `client killed at the time limit before ${
            ["echo", "idle", "wake"].find((p) => !(r as unknown as Json)[p]) ?? "its last line"
          } ended`
          : "",
        su.fellBackToTcp
          ? `${su.fellBackToTcp} fell back to TCP: ${JSON.stringify(su.fallbackReasons)}`
          : "",
        su.failed ? `${su.failed} connects failed: ${JSON.stringify(su.errors)}` : "",
        r.wake?.failed
          ? `${r.wake.failed} wake calls failed: ${JSON.stringify(r.wake.errors)}`
          : "",
        r.warnings && Object.keys(r.warnings).length
          ? `warnings: ${JSON.stringify(r.warnings)}`
          : "",
        (r.setupCurve?.length ?? 0) > 2
          ? `sessions at 0, 10, 20 … s: ${r.setupCurve!.join(", ")}`
          : "",
        r.shmSwept ? `${r.shmSwept} leftover /dev/shm objects removed afterwards` : "",
      ].filter((b) => b);
      out.push(`- **${r.sessions}**: ${bits.join("; ")}`);
      for (const [who, s] of [["client", r.clientStderr], ["server", r.serverStderr]]) {
        if (s) out.push(`  - ${who} stderr (tail): \`${s.replace(/\n/g, " ⏎ ").slice(0, 600)}\``);
      }
    }
  }
  return out.join("\n") + "\n";
}
