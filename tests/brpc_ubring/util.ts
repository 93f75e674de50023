/** Helpers of the brpc UBRing tests. */
import { execFile, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

/** `n` bytes of a pattern seeded by `seed`. */
export function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed) & 0xff;
  return b;
}

/** A logger that keeps its lines. */
export function logger() {
  const lines: string[] = [];
  return { lines, warn: (m: string) => void lines.push(m) };
}

/** Waits until `cond` holds (throws after `ms`). */
export async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The UBRing objects in /dev/shm. */
export const ubringObjects = () => readdirSync("/dev/shm").filter((n) => n.startsWith("UBRING_"));

/** Runs this runtime's `verbus ARGS`. */
export function verbus(args: string[]) {
  const bin = runtimeBinary(RUNTIME as "deno" | "bun");
  const main = join(REPO_ROOT, "cli/main.ts");
  const argv = RUNTIME === "deno" ? ["run", "-A", main, ...args] : [main, ...args];
  const r = spawnSync(bin, argv, { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" };
}

/** `verbus call --brpc-ubring --method test.PerfTestService/Test` with a 4000-byte attachment. */
export function perfTestCall(port: number) {
  return verbus([
    "call",
    "--brpc-ubring",
    "--port",
    String(port),
    "--method",
    "test.PerfTestService/Test",
    "--body-hex",
    "0801", // PerfTestRequest { echo_attachment: true }
    "--attachment-bytes",
    "4000",
    "--json",
  ]);
}

/** Like {@link verbus}, without blocking this process (a peer in this process can answer). */
export function verbusAsync(
  args: string[],
): Promise<{ code: number | null; out: string; err: string }> {
  const bin = runtimeBinary(RUNTIME as "deno" | "bun");
  const main = join(REPO_ROOT, "cli/main.ts");
  const argv = RUNTIME === "deno" ? ["run", "-A", main, ...args] : [main, ...args];
  return new Promise((resolve) => {
    execFile(bin, argv, { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 }, (e, out, err) => {
      const code = e === null ? 0 : typeof e.code === "number" ? e.code : null;
      resolve({ code, out: String(out ?? ""), err: String(err ?? "") });
    });
  });
}
