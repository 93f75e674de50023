/**
 * What the Connect layer costs per call (`make bench-connect`, or
 * `deno run -A bench/connect/overhead.ts` / `bun bench/connect/overhead.ts`): the example
 * greeter server (examples/greeter/server.ts) runs as a child on the same runtime; this process
 * calls `greeter.v1.GreeterService/Greet` three ways over the same verbus client, over shm and
 * over TCP, 1 and 32 in flight:
 *   - `bytes`: `client.call()` with a request encoded once (the byte-level API; no protobuf)
 *   - `bytes+await`: the same inside an `async` function (one more promise between the answer
 *     and the next call: what any wrapper adds, without protobuf)
 *   - `bytes+pb`: `client.call()` plus `toBinary(create(...))` and `fromBinary` per call
 *   - `connect`: the generated client (`createClient(GreeterService, createVerbusTransport(...))`)
 *   - `bytes+tp`, `connect+tp`: the same two with a W3C `traceparent` header on every call
 *     (55-byte value; 66 bytes with its name): a request `user_fields` entry, which a fabric
 *     carries in the call's metadata block (the path stays EAGER)
 * Rounds alternate the variants (A/B/C, then C/B/A…) so drift hits all alike; the table gives the
 * median µs per call over the rounds and the ratios; at 1 in flight every call is also timed on
 * its own, and a second table gives each variant's p50 and p99 and the header's cost as the
 * p50 ratio with / without it. Writes bench/results/connect-<runtime>.{md,json}.
 * Only ratios between rows of one run mean anything (the machine is shared and noisy).
 * @module
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { createVerbusTransport, RUNTIME } from "../../mod.ts";
import {
  GreeterService,
  GreetRequestSchema,
  GreetResponseSchema,
} from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
/** The host's 1-minute load average (what else ran: the numbers are only as quiet as the host). */
const loadavg = () => {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ")[0];
  } catch {
    return "?";
  }
};
const loadAtStart = loadavg();
const quick = process.argv.includes("--quick");
const CALLS = quick ? 1000 : 4000, ROUNDS = quick ? 3 : 7, WINDOW = 32;
const SVC = "greeter.v1.GreeterService";

const bin = join(ROOT, "node_modules/.bin", RUNTIME);
const child = spawn(
  bin,
  RUNTIME === "deno" ? ["run", "-A", "examples/greeter/server.ts"] : ["examples/greeter/server.ts"],
  { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
);
const port = await new Promise<number>((ok, fail) => {
  let out = "";
  child.stdout!.on("data", (d) => {
    out += d;
    const m = /listening on .*:(\d+)/.exec(out);
    if (m) ok(Number(m[1]));
  });
  child.on("exit", () => fail(new Error(`server exited: ${out}`)));
});

type Variant = "bytes" | "bytes+await" | "bytes+pb" | "connect" | "bytes+tp" | "connect+tp";
const VARIANTS: Variant[] = [
  "bytes",
  "bytes+await",
  "bytes+pb",
  "connect",
  "bytes+tp",
  "connect+tp",
];
/** A W3C trace context header, as a tracing interceptor sets it. */
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
interface Row {
  plane: string;
  inflight: number;
  variant: Variant;
  usPerCall: number[];
  /** At 1 in flight: every call's own latency, µs (not in the JSON: p50 / p99 are). */
  each?: number[];
  p50?: number;
  p99?: number;
  /** The paths the variant's calls took (the header must not move them off the fabric). */
  paths?: Record<string, number>;
}
const rows: Row[] = [];

for (const plane of ["shm", "tcp"] as const) {
  const t = createVerbusTransport({
    host: "127.0.0.1",
    port,
    fabric: plane === "shm" ? "auto" : "tcp",
  });
  const client = await t.client();
  const greeter = createClient(GreeterService, t);
  const pre = toBinary(GreetRequestSchema, create(GreetRequestSchema, { name: "bench" }));
  const one: Record<Variant, () => Promise<unknown>> = {
    bytes: () => client.call(SVC, "Greet", pre),
    "bytes+await": async () => await client.call(SVC, "Greet", pre),
    "bytes+pb": async () => {
      const req = toBinary(GreetRequestSchema, create(GreetRequestSchema, { name: "bench" }));
      return fromBinary(GreetResponseSchema, (await client.call(SVC, "Greet", req)).response);
    },
    connect: () => greeter.greet({ name: "bench" }),
    "bytes+tp": () =>
      client.call(SVC, "Greet", pre, { userFields: new Map([["traceparent", TRACEPARENT]]) }),
    "connect+tp": () => greeter.greet({ name: "bench" }, { headers: { traceparent: TRACEPARENT } }),
  };
  for (const inflight of [1, WINDOW]) {
    const byVariant = new Map<Variant, Row>();
    for (const v of VARIANTS) {
      const row: Row = { plane: client.fabric, inflight, variant: v, usPerCall: [] };
      if (inflight === 1) row.each = [];
      byVariant.set(v, row);
      rows.push(row);
    }
    for (let r = 0; r < ROUNDS + 1; r++) {
      const order = r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const v of order) {
        const call = one[v], row = byVariant.get(v)!;
        const before = { ...client.stats().calls };
        const t0 = performance.now();
        if (inflight === 1) {
          const each = r > 0 ? row.each! : [];
          for (let i = 0; i < CALLS; i++) {
            const a = performance.now();
            await call();
            each.push((performance.now() - a) * 1000);
          }
        } else {
          for (let i = 0; i < CALLS; i += inflight) {
            await Promise.all(Array.from({ length: inflight }, call));
          }
        }
        const us = (performance.now() - t0) * 1000 / CALLS;
        if (r > 0) row.usPerCall.push(us); // round 0 warms up
        const after = client.stats().calls;
        row.paths ??= {};
        for (const [p, n] of Object.entries(after)) {
          const d = n - before[p as keyof typeof before];
          if (d > 0) row.paths[p] = (row.paths[p] ?? 0) + d;
        }
      }
    }
  }
  await t.close();
}
child.kill("SIGTERM");

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
const pct = (a: number[], q: number) => [...a].sort((x, y) => x - y)[Math.floor(a.length * q)];
for (const r of rows) {
  if (r.each === undefined) continue;
  r.p50 = pct(r.each, 0.5);
  r.p99 = pct(r.each, 0.99);
  delete r.each;
}
const n = VARIANTS.length;
const lines = [
  `# Connect layer cost per call (${RUNTIME}, ${new Date().toISOString().slice(0, 16)}Z)`,
  "",
  `greeter.v1.GreeterService/Greet, server examples/greeter/server.ts on ${RUNTIME} (child process), ` +
  `${CALLS} calls × ${ROUNDS} rounds per row, rounds alternating; median µs per call. ` +
  "`+tp`: with a `traceparent` header (55-byte W3C value, 66 bytes with its name) on every call. " +
  `Host load average (1 min) ${loadAtStart} at the start, ${loadavg()} at the end, on ` +
  `${navigator.hardwareConcurrency} cores: on a loaded host the per-round means below carry ` +
  "the preemptions; the per-call p50 table further down is the steadier one.",
  "",
  `| plane | in flight | ${VARIANTS.join(" | ")} | connect / bytes | connect / bytes+pb |`,
  `|---|---|${VARIANTS.map(() => "---|").join("")}---|---|`,
];
for (let i = 0; i < rows.length; i += n) {
  const m = rows.slice(i, i + n).map((r) => median(r.usPerCall));
  const [b, , p, c] = m;
  lines.push(
    `| ${rows[i].plane} | ${rows[i].inflight} | ${m.map((x) => x.toFixed(2)).join(" | ")} | ${
      (c / b).toFixed(2)
    } | ${(c / p).toFixed(2)} |`,
  );
}
lines.push(
  "",
  "One call at a time, each call timed on its own (µs): p50 / p99, the header's cost as the p50",
  "ratio with / without it, and the paths the calls with the header took.",
  "",
  "| plane | bytes p50 / p99 | bytes+tp p50 / p99 | bytes+tp / bytes | connect p50 / p99 | connect+tp p50 / p99 | connect+tp / connect | paths with the header |",
  "|---|---|---|---|---|---|---|---|",
);
for (let i = 0; i < rows.length; i += n) {
  if (rows[i].inflight !== 1) continue;
  const by = (v: Variant) => rows.slice(i, i + n).find((r) => r.variant === v)!;
  const pp = (r: Row) => `${r.p50!.toFixed(2)} / ${r.p99!.toFixed(2)}`;
  const b = by("bytes"), bt = by("bytes+tp"), c = by("connect"), ct = by("connect+tp");
  const paths = Object.entries(ct.paths ?? {}).map(([k, v]) => `${k} ${v}`).join(", ");
  lines.push(
    `| ${rows[i].plane} | ${pp(b)} | ${pp(bt)} | ${(bt.p50! / b.p50!).toFixed(2)} | ${pp(c)} | ${
      pp(ct)
    } | ${(ct.p50! / c.p50!).toFixed(2)} | ${paths} |`,
  );
}
const md = lines.join("\n") + "\n";
console.log(md);
if (!quick) {
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, `bench/results/connect-${RUNTIME}.md`), md);
  writeFileSync(
    join(ROOT, `bench/results/connect-${RUNTIME}.json`),
    JSON.stringify({ runtime: RUNTIME, calls: CALLS, rounds: ROUNDS, rows }, null, 2) + "\n",
  );
}
process.exit(0);
