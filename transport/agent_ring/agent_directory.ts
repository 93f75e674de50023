/**
 * Where a producer finds its agent, so that no other user can stand in for it.
 *
 * An agent's ring is a sealed memfd (`agent_ring.ts`): it has no name in /dev/shm that another
 * user could create first, and no one can shrink it under a mapping. The agent publishes where it
 * is — `{pid, fd, size}` — in a record file `agent-<name>.json` inside a per-user directory
 * (`$VERBUS_RUNTIME_DIR`, else `/tmp/verbus-<uid>`). Both sides insist that the directory is a
 * real directory (not a link) owned by their own uid with mode 0700, so only that user (or root)
 * can have written a record there; a directory that fails the check is an error naming its owner
 * and mode, never a call. A producer then opens `/proc/<pid>/fd/<fd>`: the kernel hands over that
 * process's own descriptor (and only to a process allowed to read its memory), and
 * `ShmMapping.openSealed` checks the memfd's owner uid, its seals and its size before mapping.
 * A forged or garbled record therefore gets a clear error, and at worst names another ring of
 * the same user. Records are written to a temporary file and linked into place (exclusive: two
 * agents of one name cannot both publish); an agent removes its own on close, and a record whose
 * process is gone is removed by whoever finds it.
 *
 * Control path only; the caller's JS thread.
 * @module
 */
import {
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { pid } from "node:process";
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { checkOptions } from "../../util/options.ts";

/** What an agent publishes about its ring. */
export interface AgentRecord {
  /** The agent's pid. */
  pid: number;
  /** The fd of the ring's memfd, held open by the agent for as long as it runs. */
  fd: number;
  /** Bytes of the ring. */
  size: number;
}

const recordSchema: z.ZodType<AgentRecord> = z.object({
  pid: z.number().int().min(1).max(1 << 22),
  fd: z.number().int().min(0).max(1 << 20),
  size: z.number().int().min(4096).max(2 ** 40),
}).strict();

/** The largest record file read (a real one is about 50 bytes). */
const MAX_RECORD_BYTES = 4096;
/** Record files: `agent-<name>.json`. */
const RECORD_RE = /^agent-([A-Za-z0-9_.-]{1,64})\.json$/;

/** Throws INVALID_ARGUMENT unless `name` is a valid agent name (1-64 of [A-Za-z0-9_.-]). */
export function checkAgentName(name: string): void {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `agent name "${name}" must be 1-64 of [A-Za-z0-9_.-]`,
    );
  }
}

/**
 * This user's agent directory: `$VERBUS_RUNTIME_DIR`, else `/tmp/verbus-<uid>` for `uid`.
 * Created (mode 0700) when `create` and missing. Throws HANDSHAKE naming the owner and mode when
 * it is not a directory of `uid` that only `uid` can enter, and NOT_FOUND when it is missing and
 * not to be created.
 */
export function agentDirectory(uid: number, create: boolean): string {
  // deno-lint-ignore no-explicit-any
  const env = (globalThis as any).process?.env?.VERBUS_RUNTIME_DIR as string | undefined;
  const dir = env && env.length > 0 ? env : `/tmp/verbus-${uid}`;
  if (create) {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") {
        throw new VerbusError("LISTEN_FAILED", `cannot create ${dir}: ${(e as Error).message}`);
      }
    }
  }
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    throw new VerbusError("NOT_FOUND", `no agent directory ${dir} (no agent ran as uid ${uid})`);
  }
  const why = !st.isDirectory()
    ? "is not a directory (a link or a file)"
    : st.uid !== uid
    ? `is owned by uid ${st.uid}, not by this process's uid ${uid}: another user made it`
    : (st.mode & 0o077) !== 0
    ? `has mode 0${(st.mode & 0o777).toString(8)}: other users could write records into it`
    : undefined;
  if (why !== undefined) {
    throw new VerbusError(
      "HANDSHAKE",
      `agent directory ${dir} ${why}; no agent is used through it (remove it, or set ` +
        "VERBUS_RUNTIME_DIR to a directory of your own with mode 0700)",
    );
  }
  return dir;
}

/** The record file of agent `name` in `dir`. */
function recordPath(dir: string, name: string): string {
  checkAgentName(name);
  return join(dir, `agent-${name}.json`);
}

/**
 * Reads agent `name`'s record from `dir`: null when there is none; HANDSHAKE naming the file
 * when it is larger than a record, not JSON or not a record.
 */
export function readAgentRecord(dir: string, name: string): AgentRecord | null {
  const path = recordPath(dir, name);
  let text: string;
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.size > MAX_RECORD_BYTES) {
      throw new VerbusError("HANDSHAKE", `${path} is not an agent record (${st.size} bytes)`);
    }
    text = readFileSync(path, "utf8");
  } catch (e) {
    if (e instanceof VerbusError) throw e;
    if ((e as { code?: string }).code === "ENOENT") return null;
    throw new VerbusError("HANDSHAKE", `cannot read ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new VerbusError("HANDSHAKE", `${path} is not an agent record (not JSON)`);
  }
  const r = checkOptions(recordSchema, json, path);
  if (!r.ok) throw new VerbusError("HANDSHAKE", `${path} is not an agent record: ${r.why}`);
  return r.value;
}

/**
 * Publishes agent `name`'s record in `dir`; false when a record exists already (the caller
 * checks whether its agent runs, removes it when not, and tries once more).
 */
export function publishAgentRecord(dir: string, name: string, record: AgentRecord): boolean {
  const path = recordPath(dir, name);
  const tmp = join(dir, `.agent-${name}.${pid}.tmp`);
  writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
  try {
    linkSync(tmp, path);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === "EEXIST") return false;
    throw new VerbusError("LISTEN_FAILED", `cannot publish ${path}: ${(e as Error).message}`);
  } finally {
    try {
      unlinkSync(tmp);
    } catch { /* gone */ }
  }
}

/**
 * Removes agent `name`'s record from `dir` when it is the one `expect` describes (or any record,
 * with no `expect`). True when a record was removed. Never throws.
 */
export function removeAgentRecord(dir: string, name: string, expect?: AgentRecord): boolean {
  try {
    if (expect) {
      const now = readAgentRecord(dir, name);
      if (!now || now.pid !== expect.pid || now.fd !== expect.fd) return false;
    }
    unlinkSync(recordPath(dir, name));
    return true;
  } catch {
    return false;
  }
}

/** The agent names that have a record in `dir` (none when it cannot be read). */
export function agentRecordNames(dir: string): string[] {
  try {
    return readdirSync(dir).flatMap((n) => {
      const m = RECORD_RE.exec(n);
      return m ? [m[1]] : [];
    });
  } catch {
    return [];
  }
}
