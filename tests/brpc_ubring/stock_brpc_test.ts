/**
 * verbus against stock brpc over UBRing, both directions (needs a brpc build with
 * `-DWITH_UBRING=ON`; README "Talking to brpc over UBRing"): brpc's `ubring_performance_client
 * --use_ubring` runs its test against `verbus serve --brpc-ubring` with no error and bytes moved,
 * and `verbus call --brpc-ubring` calls `ubring_performance_server --use_ubring` over the rings.
 * Set `VERBUS_BRPC_UBRING_DIR` to the directory holding both binaries; without it (CI has no
 * brpc) the tests are skipped saying so.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { type Child, withChild } from "../util/proc.ts";
import { assertPerfTestAnswered, perfTestCall } from "./util.ts";

const DIR = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env
  .VERBUS_BRPC_UBRING_DIR;
const BIN = (name: string) => join(DIR ?? "", name);
const skip = !DIR
  ? "set VERBUS_BRPC_UBRING_DIR to a brpc build's example/ubring_performance (README: Talking to brpc over UBRing)"
  : !existsSync(BIN("ubring_performance_client"))
  ? `no ubring_performance_client in ${DIR}`
  : false;

/**
 * `out` without the two lines brpc's UBRing binaries log at their own start, before any
 * connection: "The Timer module is not initialized" (E) and "Fail to set concurrency by tag" (W).
 */
function withoutStartupNoise(out: string): string {
  const noise = /Timer module is not initialized|Fail to set concurrency/;
  return out.split("\n").filter((l) => !noise.test(l)).join("\n");
}

/** A port free right now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

test(
  `stock ubring_performance_client --use_ubring against verbus serve --brpc-ubring (${RUNTIME})`,
  async () => {
    const serve = { args: ["serve", "--port", "0", "--brpc-ubring", "--fabric", "none"] };
    await withChild(RUNTIME as "deno" | "bun", "cli/main.ts", serve, (c: Child) => {
      const r = spawnSync(BIN("ubring_performance_client"), [
        "--use_ubring",
        `--servers=127.0.0.1:${c.port}`,
        "--test_seconds=2",
        "--thread_num=1",
        "--queue_depth=8",
        "--attachment_size=4096",
        "--echo_attachment",
        `--dummy_port=${0}`,
      ], { encoding: "utf8", timeout: 60_000 });
      const out = `${r.stdout}\n${r.stderr}`;
      assertEquals(r.status, 0, out);
      const mb = /Throughput: ([\d.]+)MB\/s, QPS: \d+k/.exec(out);
      assert(mb !== null && Number(mb[1]) > 0, out); // 4 KiB each way: some bytes moved
      const ours = withoutStartupNoise(out);
      assert(!/^E\d{4} /m.test(ours), `no brpc error line:\n${out}`);
      assert(!/Fail|failed|error_code/i.test(ours), out);
      return Promise.resolve();
    });
  },
  { skip, timeoutMs: 90_000 },
);

test(
  `verbus call --brpc-ubring (${RUNTIME}) against stock ubring_performance_server --use_ubring`,
  async () => {
    const port = await freePort();
    const srv = spawn(BIN("ubring_performance_server"), ["--use_ubring", `--port=${port}`], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`brpc server not ready:\n${out}`)), 20_000);
        const on = (b: Uint8Array) => {
          out += new TextDecoder().decode(b);
          if (/is serving on port/.test(out)) {
            clearTimeout(timer);
            resolve();
          }
        };
        srv.stdout!.on("data", on);
        srv.stderr!.on("data", on);
      });
      const r = perfTestCall(port);
      assertPerfTestAnswered(r);
    } finally {
      srv.kill("SIGTERM");
      await new Promise((r) => srv.once("exit", r));
    }
    assert(!/^E\d{4} /m.test(withoutStartupNoise(out)), `no brpc error line:\n${out}`);
  },
  { skip, timeoutMs: 90_000 },
);
