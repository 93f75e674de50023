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
 * Rounds alternate the three (A/B/C, then C/B/A…) so drift hits all alike; the table gives the
 * median µs per call over the rounds and the ratios. Writes bench/results/connect-<runtime>.{md,json}.
 * Only ratios between rows of one run mean anything (the machine is shared and noisy).
 * @module
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { createVerbusTransport, RUNTIME } from "../../mod.ts";
import {
  GreeterService,
  GreetRequestSchema,
  GreetResponseSchema,
} from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
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

type Variant = "bytes" | "bytes+await" | "bytes+pb" | "connect";
const VARIANTS: Variant[] = ["bytes", "bytes+await", "bytes+pb", "connect"];
interface Row {
  plane: string;
  inflight: number;
  variant: Variant;
  usPerCall: number[];
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
  };
  for (const inflight of [1, WINDOW]) {
    const byVariant = new Map<Variant, Row>();
    for (const v of VARIANTS) {
      const row = { plane: client.fabric, inflight, variant: v, usPerCall: [] as number[] };
      byVariant.set(v, row);
      rows.push(row);
    }
    for (let r = 0; r < ROUNDS + 1; r++) {
      const order = r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const v of order) {
        const call = one[v];
        const t0 = performance.now();
        if (inflight === 1) { for (let i = 0; i < CALLS; i++) await call(); }
        else {
          for (let i = 0; i < CALLS; i += inflight) {
            await Promise.all(Array.from({ length: inflight }, call));
          }
        }
        const us = (performance.now() - t0) * 1000 / CALLS;
        if (r > 0) byVariant.get(v)!.usPerCall.push(us); // round 0 warms up
      }
    }
  }
  await t.close();
}
child.kill("SIGTERM");

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
const lines = [
  `# Connect layer cost per call (${RUNTIME}, ${new Date().toISOString().slice(0, 16)}Z)`,
  "",
  `greeter.v1.GreeterService/Greet, server examples/greeter/server.ts on ${RUNTIME} (child process), ` +
  `${CALLS} calls × ${ROUNDS} rounds per row, rounds alternating; median µs per call.`,
  "",
  "| plane | in flight | bytes | bytes+await | bytes+pb | connect | connect / bytes | connect / bytes+pb |",
  "|---|---|---|---|---|---|---|---|",
];
for (let i = 0; i < rows.length; i += VARIANTS.length) {
  const [b, a, p, c] = rows.slice(i, i + VARIANTS.length).map((r) => median(r.usPerCall));
  lines.push(
    `| ${rows[i].plane} | ${rows[i].inflight} | ${b.toFixed(2)} | ${a.toFixed(2)} | ${
      p.toFixed(2)
    } | ${c.toFixed(2)} | ${(c / b).toFixed(2)} | ${(c / p).toFixed(2)} |`,
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
