/**
 * What killed agents leave behind (an agent that stops removes its own): the sweep a shm server
 * runs at start removes records whose agent pid is dead, and rings of older versions (named
 * objects in /dev/shm) whose header names a dead pid; it leaves alone a live agent's record and
 * an unpublished ring (an agent still creating it), and never maps a candidate, so a truncated
 * one cannot fault the server.
 */
import { spawnSync } from "node:child_process";
import { existsSync, unlinkSync, writeFileSync } from "node:fs";
import { pid } from "node:process";
import { userInfo } from "node:os";
import { assert, assertEquals, test } from "../harness.ts";
import { HEADER_WORD, MAGIC, VERSION } from "../../transport/agent_ring/agent_ring.ts";
import { removeStaleAgentRings } from "../../transport/agent_ring/agent_leftovers.ts";
import { ShmMapping } from "../../transport/shm/shm_object.ts";
import { serve } from "../../rpc/server/server.ts";
import { agentName, agentRecordFile } from "./util.ts";

/** A pid that ran and exited (reaped): no process has it now. */
function deadPid(): number {
  const r = spawnSync("true");
  assert(r.pid !== undefined && r.pid > 0, "spawned a process");
  return r.pid!;
}

/** A record of agent `name` naming `agentPid` (as a killed agent leaves it). */
function fakeRecord(name: string, agentPid: number): string {
  const file = agentRecordFile(name);
  writeFileSync(file, JSON.stringify({ pid: agentPid, fd: 9, size: 8192 }), { mode: 0o600 });
  return file;
}

/** An older version's ring object in /dev/shm whose header says `agentPid`, published or not. */
async function legacyRing(name: string, agentPid: number, published: boolean): Promise<string> {
  const shm = `/verbus-agent-${userInfo().uid}-${name}`;
  const m = await ShmMapping.create(shm, 8192);
  const h = new Int32Array(m.bytes.buffer, m.bytes.byteOffset, 64);
  h[HEADER_WORD.version] = VERSION;
  h[HEADER_WORD.agentPid] = agentPid;
  if (published) Atomics.store(h, HEADER_WORD.magic, MAGIC);
  m.close();
  return `/dev/shm${shm}`;
}

function removeAll(files: string[]): void {
  for (const f of files) {
    try {
      unlinkSync(f);
    } catch { /* removed by the sweep */ }
  }
}

test("stale agent records: a dead agent's is removed, a live one's is kept", async () => {
  const dead = fakeRecord(agentName("stale-dead"), deadPid());
  const live = fakeRecord(agentName("stale-live"), pid);
  try {
    const removed = await removeStaleAgentRings();
    assert(removed.includes(dead), `removed: ${removed.join(", ")}`);
    assertEquals([existsSync(dead), existsSync(live)], [false, true]);
  } finally {
    removeAll([dead, live]);
  }
});

test("stale agent rings of older versions: a dead agent's is removed, a live or unpublished one is kept, a 0-byte one is harmless", async () => {
  const dead = await legacyRing(agentName("stale-dead"), deadPid(), true);
  const live = await legacyRing(agentName("stale-live"), pid, true);
  const young = await legacyRing(agentName("stale-young"), deadPid(), false);
  // A 0-byte object under an agent ring's name: the sweep mapped 4 KiB of it and read the
  // header, so every later server of that user died of SIGBUS at start-up.
  const empty = `/dev/shm/verbus-agent-${userInfo().uid}-${agentName("stale-empty")}`;
  writeFileSync(empty, "", { mode: 0o600 });
  try {
    const removed = await removeStaleAgentRings();
    assert(removed.includes(dead.slice("/dev/shm".length)), `removed: ${removed.join(", ")}`);
    assertEquals([existsSync(dead), existsSync(live), existsSync(young)], [false, true, true]);
  } finally {
    removeAll([dead, live, young, empty]);
  }
});

test("stale agent records: a shm server starting removes them and logs their names", async () => {
  const dead = fakeRecord(agentName("stale-srv"), deadPid());
  const empty = `/dev/shm/verbus-agent-${userInfo().uid}-${agentName("stale-srv-empty")}`;
  writeFileSync(empty, "", { mode: 0o600 });
  const lines: string[] = [];
  try {
    const server = await serve({
      port: 0,
      fabric: { fabrics: ["shm"] },
      logger: { warn: (m: string) => lines.push(m), info: (m: string) => lines.push(m) },
      services: {},
    });
    try {
      assert(!existsSync(dead), `${dead} was removed`);
      assert(
        lines.some((l) => l.includes("left by dead processes") && l.includes(dead)),
        lines.join("\n"),
      );
    } finally {
      await server.close();
    }
  } finally {
    removeAll([dead, empty]);
  }
});
