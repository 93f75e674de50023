/**
 * No mapping a peer or bystander can shrink. While calls run — a server and a client over shm, an
 * agent and its producers — a same-user bystander truncates every shared object those processes
 * hold (`truncate -s 0` through /proc/<pid>/fd: notify pages, session regions, the agent ring):
 * every truncation is refused (the objects are sealed memfds), nothing is left in /dev/shm for it
 * to find by name, and no process dies (SIGBUS would exit 135); the calls go on.
 * @module
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { otherRuntime, spawnScript } from "../util/proc.ts";
import {
  agentName,
  producerResult,
  startAgentChild,
  startProducer,
  stopAgent,
} from "../agent/util.ts";

/** The memfds process `pid` holds whose name starts `memfd:verbus` (`/proc/pid/fd/N` paths). */
function sharedObjects(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("/memfd:verbus")
        ? [`/proc/${pid}/fd/${fd}`]
        : [];
    } catch {
      return [];
    }
  });
}

/** `truncate -s 0` every path; returns those where it succeeded (it must succeed on none). */
function truncateAll(paths: string[]): string[] {
  return paths.filter((p) => spawnSync("truncate", ["-s", "0", p]).status === 0);
}

/** This host's /dev/shm names that belong to any of `pids`. */
function namedObjects(...pids: number[]): string[] {
  return readdirSync("/dev/shm").filter((n) => pids.some((p) => n.startsWith(`verbus-${p}-`)));
}

test(
  `truncating every shared object of a ${RUNTIME} server and a ${otherRuntime()} client mid-call: refused, nobody dies`,
  async () => {
    const srv = await spawnScript(RUNTIME as RuntimeName, "tests/fixtures/fabric_server.ts");
    let cli;
    try {
      cli = await spawnScript(otherRuntime(), "tests/fixtures/fabric_client.ts", {
        args: ["--port", String(srv.port)],
        timeoutMs: 60_000,
      });
      const targets = [...sharedObjects(srv.pid), ...sharedObjects(cli.pid)];
      const notify = targets.filter((t) => readlinkSync(t).includes("-notify")).length;
      assert(
        notify >= 2,
        `both processes hold a notify page: ${targets.map((t) => readlinkSync(t))}`,
      );
      assertEquals(namedObjects(srv.pid, cli.pid), [], "no object has a name in /dev/shm");
      assertEquals(truncateAll(targets), [], "every truncation is refused");
      // The client keeps 8 calls in flight: both must still run, and a fresh client is served.
      await new Promise((r) => setTimeout(r, 300));
      assertEquals([srv.pid, cli.pid].filter((p) => !alive(p)), [], "no process died");
      const check = await spawnScript(RUNTIME as RuntimeName, "tests/fixtures/report_client.ts", {
        args: ["--port", String(srv.port), "--calls", "50"],
        ready: /result (\{.*\})/,
        timeoutMs: 60_000,
      });
      await check.exited;
      const r = JSON.parse(/result (\{.*\})/.exec(check.output())![1]);
      assertEquals([r.fabric, r.ok, r.bad], ["shm", 50, 0], check.output());
    } finally {
      await cli?.kill();
      await srv.kill();
    }
  },
  { timeoutMs: 120_000 },
);

test(
  "truncating an agent's ring and its producers' objects under load: refused, agent and producers live",
  async () => {
    const name = agentName("trunc");
    const srv = await spawnScript(RUNTIME as RuntimeName, "tests/fixtures/fabric_server.ts");
    let agent;
    try {
      agent = await startAgentChild(name, srv.port);
      const busy = await startProducer(name, ["--id", "1", "--mode", "busy", "--window", "8"]);
      try {
        const ring = sharedObjects(agent.pid).filter((t) =>
          readlinkSync(t).includes("verbus-agent")
        );
        assertEquals(ring.length, 1, "the agent holds its ring's memfd");
        assertEquals(truncateAll([...sharedObjects(agent.pid), ...sharedObjects(busy.pid)]), []);
        await new Promise((r) => setTimeout(r, 300));
        assertEquals([agent.pid, busy.pid].filter((p) => !alive(p)), [], "no process died");
        const kv = await startProducer(name, ["--id", "2", "--mode", "kv", "--calls", "32"]);
        const res = await producerResult(kv);
        assertEquals([res.ok, res.badCount], [32, 0], JSON.stringify(res));
      } finally {
        await busy.kill();
      }
    } finally {
      await stopAgent(agent, name);
      await srv.kill();
    }
  },
  { timeoutMs: 180_000 },
);

/** True while `pid` runs and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readlinkSync(`/proc/${pid}/exe`);
    return stat.length > 0;
  } catch {
    return false;
  }
}
