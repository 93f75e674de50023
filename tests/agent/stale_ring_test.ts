/**
 * Rings of agents that were killed (an agent that stops removes its own): the stale-object sweep
 * a shm server runs at start removes those whose agent pid is dead, and leaves alone a live
 * agent's ring and one whose header is not published yet (an agent still creating it).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { pid } from "node:process";
import { assert, assertEquals, test } from "../harness.ts";
import { agentObjectName, H, MAGIC, VERSION } from "../../transport/shm/agent_ring.ts";
import { removeStaleAgentRings } from "../../transport/shm/agent_ring_host.ts";
import { ShmMapping } from "../../transport/shm/shm_object.ts";
import { serve } from "../../rpc/server.ts";
import { agentName } from "./util.ts";

/** A pid that ran and exited (reaped): no process has it now. */
function deadPid(): number {
  const r = spawnSync("true");
  assert(r.pid !== undefined && r.pid > 0, "spawned a process");
  return r.pid!;
}

/** An agent-ring object named `name` whose header says `agentPid`, published or not. */
async function fakeRing(name: string, agentPid: number, published: boolean): Promise<string> {
  const shm = agentObjectName(name);
  const m = await ShmMapping.create(shm, 8192);
  const h = new Int32Array(m.bytes.buffer, m.bytes.byteOffset, 64);
  h[H.version] = VERSION;
  h[H.agentPid] = agentPid;
  if (published) Atomics.store(h, H.magic, MAGIC);
  m.close();
  return `/dev/shm${shm}`;
}

test("stale agent rings: a dead agent's is removed, a live or unpublished one is kept", async () => {
  const dead = await fakeRing(agentName("stale-dead"), deadPid(), true);
  const live = await fakeRing(agentName("stale-live"), pid, true);
  const young = await fakeRing(agentName("stale-young"), deadPid(), false);
  try {
    const removed = await removeStaleAgentRings();
    assert(removed.includes(dead.slice("/dev/shm".length)), `removed: ${removed.join(", ")}`);
    assertEquals([existsSync(dead), existsSync(live), existsSync(young)], [false, true, true]);
  } finally {
    for (const f of [dead, live, young]) {
      if (existsSync(f)) (await ShmMapping.open(f.slice("/dev/shm".length), 4096)).unlink();
    }
  }
});

test("stale agent rings: a shm server starting removes them and logs their names", async () => {
  const dead = await fakeRing(agentName("stale-srv"), deadPid(), true);
  const lines: string[] = [];
  const server = await serve({
    port: 0,
    fabric: { fabrics: ["shm"] },
    logger: { warn: (m: string) => lines.push(m), info: (m: string) => lines.push(m) },
    services: {},
  });
  try {
    assert(!existsSync(dead), `${dead} was removed`);
    const name = dead.slice("/dev/shm".length);
    assert(
      lines.some((l) => l.includes("left by dead processes") && l.includes(name)),
      lines.join("\n"),
    );
  } finally {
    await server.close();
  }
});
