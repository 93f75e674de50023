/**
 * One process of the agent benchmark: connects (through the agent, `--agent NAME`, or on its own,
 * `--address HOST:PORT`), warms up, prints `ready`, waits for the `--go` file, then keeps
 * `--window` ECHO calls of `--bytes` bytes in flight for `--seconds` and prints
 * `result {"calls":N,"seconds":S,"fabric":…,"via":…}`.
 *
 *   deno run -A bench/agent/worker.ts (--agent NAME | --address H:P) --go FILE [--seconds 5]
 *       [--window 32] [--bytes 16] [--idle-after-ms 0.2 (agent client)] [--nap-us N (agent client)]
 *       [--source-addr A (direct over verbs: the local RDMA address)]
 * @module
 */
import { existsSync } from "node:fs";
import { connect } from "../../mod.ts";
import { arg, exit, numArg, sleep } from "../common/args.ts";

const agent = arg("agent", ""), address = arg("address", ""), go = arg("go", "");
const seconds = numArg("seconds", 5), window = numArg("window", 32), bytes = numArg("bytes", 16);
if (!go || (!agent && !address)) {
  throw new Error("worker: --go FILE and --agent NAME or --address H:P");
}
const idleAfterMs = numArg("idle-after-ms", 0.2);
/** The agent client's nap (µs; default: the client's own). */
const napUs = arg("nap-us", "");
const sourceAddr = arg("source-addr", "");
// Generous timeouts: in the emulated VM many processes start and handshake at once.
const timeoutMs = numArg("timeout-ms", 30_000);
const c = agent
  ? await connect(`agent:${agent}`, {
    idleAfterMs,
    timeoutMs,
    ...(napUs === "" ? {} : { napUs: Number(napUs) }),
  })
  : await connect(address, {
    timeoutMs,
    ...(sourceAddr ? { providerOptions: { verbs: { sourceAddr } } } : {}),
  });
const req = new Uint8Array(bytes);
let fabric = "", via = "direct";
for (let i = 0; i < 200; i++) {
  const r = await c.call("verbus.Demo", "Echo", req);
  fabric = r.fabric;
  if ("via" in r) via = String(r.via);
}
console.log("ready");
while (!existsSync(go)) await sleep(5);
let calls = 0, running = true;
const t0 = performance.now();
setTimeout(() => (running = false), seconds * 1000);
await Promise.all(Array.from({ length: window }, async () => {
  while (running) {
    await c.call("verbus.Demo", "Echo", req);
    calls++;
  }
}));
const secs = (performance.now() - t0) / 1000;
const waits = "waits" in c.stats() ? (c.stats() as { waits: unknown }).waits : undefined;
console.log(`result ${JSON.stringify({ calls, seconds: secs, fabric, via, waits })}`);
await c.close();
exit(0);
