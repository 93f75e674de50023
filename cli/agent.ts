/**
 * `verbus agent --connect HOST:PORT [--listen NAME]`: the same-host agent. It connects once to
 * the remote server (the best fabric, then TCP) and opens the shared-memory ring `agent:NAME`
 * that local processes of the same user join with `connect("agent:NAME")`; their calls then
 * share its one session. Stops gracefully on SIGINT / SIGTERM (joined processes see it at once).
 * @module
 */
import { type StopSignal, withStopSignal } from "./stop_signal.ts";
import { z } from "zod";
import { FABRICS, RUNTIME, startAgent } from "../mod.ts";
import { parseCommandLine, usageError } from "./options.ts";
import { wantsJson } from "./style.ts";
import { count } from "./plural.ts";
import { cliLogger } from "../util/log.ts";

const HELP = `usage: verbus agent --connect HOST:PORT [--listen NAME] [--fabric auto|${
  FABRICS.join("|")
}|tcp]
                    [--producers N] [--slots N] [--slot-bytes N] [--spill-bytes N] [--reclaim-ms N]
                    [--idle-after-ms N] [--source-addr A] [--rdma-mode poll|event] [--json]

  --connect HOST:PORT   the remote verbus server (one connection, the best fabric both hosts share)
  --listen NAME         the agent's name; local processes call through it as agent:NAME
                        (default "default")
  --producers N         local processes that may be joined at once (default 32)
  --slots N             calls in flight per process (default 32)
  --slot-bytes N        the largest request or response a ring slot holds (default 65536)
  --spill-bytes N       each process's spill area for larger ones, a multiple of 8192: requests
                        and responses up to half of it go through the agent (default 4194304)
  --reclaim-ms N        a ring position claimed and never published is reclaimed after N ms
                        (its producer died mid-write; default 1000)
  --idle-after-ms N     with no request for N ms, sleep in the futex instead of polling (default 0.2)
  --source-addr A       bind the RDMA connection to local address A
  --rdma-mode poll|event  how the verbs session waits for completions

Prints one line when ready ("... listening on agent:NAME ..."); stops on SIGINT / SIGTERM.`;

const schema = z.object({
  connect: z.string().regex(/^[^:\s]+:\d{1,5}$/, "expected HOST:PORT"),
  listen: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "expected 1-64 of [A-Za-z0-9_.-]").default(
    "default",
  ),
  fabric: z.enum(["auto", ...FABRICS, "tcp"] as const).default("auto"),
  producers: z.coerce.number().int().min(1).max(1024).default(32),
  slots: z.coerce.number().int().min(1).max(1024).default(32),
  "slot-bytes": z.coerce.number().int().min(256).max(1 << 24).default(65536),
  "spill-bytes": z.coerce.number().int().min(0).max(1 << 30).multipleOf(8192).default(4 << 20),
  "reclaim-ms": z.coerce.number().int().min(1).max(600_000).default(1000),
  "idle-after-ms": z.coerce.number().min(0).max(1000).default(0.2),
  "source-addr": z.string().min(1).optional(),
  "rdma-mode": z.enum(["poll", "event"]).optional(),
  json: z.boolean().default(false),
}).strict();

/** The smallest power of two ≥ n. */
const pow2 = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(2, n)));

/** Entry point of `verbus agent`. */
export async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    return 0;
  }
  let o: z.output<typeof schema>;
  try {
    o = parseCommandLine(schema, args);
  } catch (e) {
    return usageError("agent", e, wantsJson(args));
  }
  // The stop listeners before the work: a SIGTERM right after the ready line stops it cleanly.
  return await withStopSignal((stop) => run(o, stop));
}

async function run(o: z.output<typeof schema>, stop: StopSignal): Promise<number> {
  const at = o.connect.lastIndexOf(":");
  const agent = await startAgent({
    host: o.connect.slice(0, at),
    port: Number(o.connect.slice(at + 1)),
  }, {
    name: o.listen,
    producers: o.producers,
    slots: o.slots,
    entries: Math.min(65536, pow2(o.producers * o.slots)),
    slotBytes: pow2(o["slot-bytes"]),
    spillBytes: o["spill-bytes"],
    reclaimMs: o["reclaim-ms"],
    idleAfterMs: o["idle-after-ms"],
    client: {
      fabric: o.fabric,
      providerOptions: {
        verbs: {
          ...(o["source-addr"] ? { sourceAddr: o["source-addr"] } : {}),
          ...(o["rdma-mode"] ? { mode: o["rdma-mode"] } : {}),
        },
      },
      logger: cliLogger("verbus agent", o.json),
    },
  });
  const fabric = agent.remote.fabric;
  console.log(
    o.json
      ? JSON.stringify({
        listening: `agent:${o.listen}`,
        ring: agent.ringName,
        remote: o.connect,
        fabric,
        runtime: RUNTIME,
      })
      : `verbus agent (${RUNTIME}): listening on agent:${o.listen} (${agent.ringName}), forwarding to ${o.connect} over ${fabric}`,
  );
  await stop.stopped;
  const s = agent.stats();
  await agent.close();
  if (!o.json) {
    console.log(
      `verbus agent: stopped after ${count(s.forwarded, "call")} (${s.failed} failed); ring ${
        JSON.stringify(s.ring)
      }`,
    );
  }
  return 0;
}
