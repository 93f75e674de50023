/**
 * EAGER ECHO of 64 B over URMA (simulated liburma) against the shm fabric, same script, same
 * runtime, in one run: the cost of the URMA API layering. The server runs in a child process of
 * this runtime (tests/urma/fixtures/fabric_server.ts offers both fabrics); for each fabric one
 * client measures the round trip of sequential calls (p50 / p99, calls/s with 1 in flight) and
 * the throughput with 32 calls in flight. Run as
 *   deno run -A bench/e2e/urma_vs_shm.ts [--calls N] [--lib PATH]    bun bench/e2e/urma_vs_shm.ts ...
 * Prints one JSON line; `ratio` is urma / shm for latencies and shm / urma for throughput (how
 * many times slower URMA is). The URMA numbers are of the SIMULATED liburma.
 * @module
 */
import { fileURLToPath } from "node:url";
import { connect } from "../../rpc/client/client.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { spawnScript } from "../../tests/util/proc.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const arg = (
  name: string,
  def: string,
) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : def);
const calls = Number(arg("--calls", "20000"));
const lib = arg(
  "--lib",
  fileURLToPath(new URL("../../build/urma_sim/liburma.so.0", import.meta.url)),
);
const region = {
  slots: 64,
  slotSize: 4096,
  bulkSize: 1 << 20,
  objectSlabs: 16,
  objectSlabSize: 65536,
  stagingSize: 1 << 21,
};
const payload = new Uint8Array(64).fill(7);

interface Result {
  fabric: string;
  p50_us: number;
  p99_us: number;
  calls_per_s_1: number;
  calls_per_s_32: number;
}

const round = (x: number) => Math.round(x * 10) / 10;

async function measure(port: number, fabric: "urma" | "shm"): Promise<Result> {
  const c = await connect({ host: "127.0.0.1", port }, {
    fabric,
    providerOptions: { urma: { library: lib } },
    region,
    logger: { warn: () => {} },
  });
  try {
    if (c.handshake.state !== "ESTABLISHED") {
      throw new Error(`${fabric}: ${JSON.stringify(c.handshake)}`);
    }
    const call = () => c.call("test.Fabric", "Echo", payload);
    for (let i = 0; i < Math.min(2000, calls / 4); i++) await call(); // warm-up
    const lat = new Float64Array(calls);
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) {
      const t = performance.now();
      const r = await call();
      lat[i] = performance.now() - t;
      if (r.path !== "EAGER") throw new Error(`${fabric}: call went ${r.path}`);
    }
    const seqMs = performance.now() - t0;
    lat.sort();
    const q = (p: number) => round(lat[Math.floor(p * (calls - 1))] * 1000);
    let started = 0;
    const t1 = performance.now();
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (started < calls) {
        started++;
        await call();
      }
    }));
    const parMs = performance.now() - t1;
    return {
      fabric: c.fabric,
      p50_us: q(0.5),
      p99_us: q(0.99),
      calls_per_s_1: Math.round(calls / seqMs * 1000),
      calls_per_s_32: Math.round(calls / parMs * 1000),
    };
  } finally {
    await c.close();
  }
}

const child = await spawnScript(RUNTIME as RuntimeName, "tests/urma/fixtures/fabric_server.ts", {
  args: [lib],
  timeoutMs: 30_000,
});
try {
  const shm = await measure(child.port, "shm");
  const urma = await measure(child.port, "urma");
  console.log(JSON.stringify({
    name: "urma-vs-shm eager echo 64B",
    runtime: RUNTIME,
    calls,
    simulated: urma.fabric.includes("simulated"),
    shm,
    urma,
    ratio: {
      p50: round(urma.p50_us / shm.p50_us),
      p99: round(urma.p99_us / shm.p99_us),
      calls_per_s_1: round(shm.calls_per_s_1 / urma.calls_per_s_1),
      calls_per_s_32: round(shm.calls_per_s_32 / urma.calls_per_s_32),
    },
  }));
} finally {
  await child.kill();
}
