/** Helpers of the brpc UBRing tests. */
import { readdirSync } from "node:fs";
import { assertEquals } from "../harness.ts";
import { jsonLines, verbus, type VerbusRun } from "../util/verbus_cli.ts";

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

/** Asserts that a {@link perfTestCall} run answered over brpc-ubring with its 4000 bytes. */
export function assertPerfTestAnswered(r: VerbusRun): void {
  assertEquals(r.code, 0, r.err + r.out);
  const line = jsonLines(r.out)[0] as {
    ok: boolean;
    fabric: string;
    result: Record<string, unknown>;
  };
  assertEquals([line.ok, line.fabric, line.result.attachment_bytes], [
    true,
    "brpc-ubring",
    4000,
  ], r.out);
}
