/**
 * What agents of this user that were killed leave behind, removed by the stale-object sweep a shm
 * server runs at start (an agent that stops removes its own record; its ring, a memfd, goes with
 * its process either way).
 *
 * Control path; never throws.
 * @module
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import {
  agentDirectory,
  type AgentRecord,
  agentRecordNames,
  readAgentRecord,
  removeAgentRecord,
} from "./agent_directory.ts";
import { HEADER_WORD, MAGIC } from "./agent_ring.ts";
import { effectiveUid, processAlive } from "../shm/shm_object.ts";

/**
 * Removes what agents of this user that were killed left behind (an agent that stops removes its
 * own): records in the agent directory whose pid is gone (their ring, a memfd, went with the
 * process), and rings of older versions that were named objects in /dev/shm
 * (`verbus-agent-<uid>-<name>`) whose header names a dead pid — read with plain reads, never
 * mapped, so an object someone truncated cannot fault this process. A ring whose header is not
 * published (an agent still creating it) or not an agent ring is left alone. Returns what was
 * removed; never throws. Control path.
 */
export async function removeStaleAgentRings(): Promise<string[]> {
  const uid = await effectiveUid();
  const removed: string[] = [];
  let dir: string | null = null;
  try {
    dir = agentDirectory(uid, false);
  } catch { /* none, or not ours: nothing of ours in it */ }
  for (const name of dir ? agentRecordNames(dir) : []) {
    let record: AgentRecord | null = null;
    try {
      record = readAgentRecord(dir!, name);
    } catch { /* garbled: an agent replaces it when it starts */ }
    if (record && !processAlive(record.pid) && removeAgentRecord(dir!, name, record)) {
      removed.push(join(dir!, `agent-${name}.json`));
    }
  }
  const prefix = `verbus-agent-${uid}-`;
  let names: string[] = [];
  try {
    names = readdirSync("/dev/shm").filter((n) => n.startsWith(prefix));
  } catch { /* no /dev/shm */ }
  for (const n of names) {
    const owner = legacyRingOwner(`/dev/shm/${n}`, uid);
    if (owner > 0 && !processAlive(owner)) {
      try {
        unlinkSync(`/dev/shm/${n}`);
        removed.push(`/${n}`);
      } catch { /* raced with its removal */ }
    }
  }
  return removed;
}

/**
 * The agent pid in the header of an older version's named ring at `path`, when `uid` owns it and
 * its header is published; else 0. Reads 64 bytes (a truncated object reads short, never faults).
 */
function legacyRingOwner(path: string, uid: number): number {
  let fd = -1;
  try {
    fd = openSync(path, "r");
    if (fstatSync(fd).uid !== uid) return 0;
    const h = new Int32Array(16);
    const got = readSync(fd, new Uint8Array(h.buffer), 0, 64, 0);
    return got === 64 && h[HEADER_WORD.magic] === MAGIC ? h[HEADER_WORD.agentPid] : 0;
  } catch {
    return 0;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}
