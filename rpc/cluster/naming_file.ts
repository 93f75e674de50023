/**
 * `file://PATH` — brpc's file naming service: one `HOST:PORT [TAG]` per line, `#` comments and
 * blank lines skipped; `file://conf/list` is the relative path `conf/list`, `file:///etc/list`
 * an absolute one. The file is followed: a change is seen through `fs.watch` on its directory
 * (both runtimes deliver it; the directory, not the file, so that a file replaced by a rename —
 * the safe way to rewrite it — is still seen) and, should the watch miss or fail, by comparing
 * its inode, size and mtime every `pollMs` (default 1 s: a `stat`, cheap; brpc checks every
 * 100 ms).
 *
 * A file that disappears, grows past 4 MiB or has a line that does not parse keeps the last good
 * list in force and is reported once through `onError` (NOT_FOUND, FULL, INVALID_ARGUMENT naming
 * the line); brpc skips bad lines, but a half-written line read as another address is worse than
 * waiting for the file to be whole. Write the file to a temporary name and rename it into place:
 * a file rewritten in place can be read half written (a read right after a change waits 50 ms of
 * quiet, which narrows that window but cannot close it).
 *
 * Threading: the JS thread that made it.
 * @module
 */
import { type FSWatcher, watch as fsWatch } from "node:fs";
import { open, stat } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import type { NamingOptions, NamingService, NamingWatcher, ServerNode } from "./naming.ts";
import { parseServerLine } from "./naming.ts";
import {
  afterScheme,
  asVerbusError,
  commonOptions,
  follow,
  uniqueServers,
  WatchSet,
} from "./naming_follow.ts";

/** Options the file service adds to {@link NamingOptions}. */
export interface FileNamingOptions extends NamingOptions {
  /**
   * Watch the directory for changes (default true). False polls only: for file systems that
   * deliver no change events (network mounts).
   */
  fileWatch?: boolean;
}

const fileSchema = z.looseObject({ fileWatch: z.boolean().optional() });

/** A file larger than this is refused (a server list is a few KiB; this bounds memory). */
export const MAX_SERVER_FILE_BYTES: number = 4 * 1024 * 1024;
/** How long a watch waits for the writes of one change to settle before reading, ms. */
const SETTLE_MS = 50;

/**
 * The servers of a server-list text (the contents of a `file://` file). Throws INVALID_ARGUMENT
 * naming `what`, the line number and the line that does not parse.
 */
export function parseServerFile(text: string, what: string): ServerNode[] {
  const out: ServerNode[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    try {
      const node = parseServerLine(lines[i]);
      if (node) out.push(node);
    } catch (e) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `${what} line ${i + 1}: "${lines[i].trim().slice(0, 200)}" is not HOST:PORT [TAG]`,
        { cause: e },
      );
    }
  }
  return uniqueServers(out);
}

/** Reads `path` whole, refusing it past {@link MAX_SERVER_FILE_BYTES}. */
async function readBounded(path: string, what: string): Promise<{ text: string; key: string }> {
  let file;
  try {
    file = await open(path, "r");
  } catch (e) {
    throw asVerbusError(e, "NOT_FOUND", `${what}: cannot open "${path}"`);
  }
  try {
    const st = await file.stat();
    if (st.size > MAX_SERVER_FILE_BYTES) {
      throw new VerbusError(
        "FULL",
        `${what}: "${path}" has ${st.size} bytes, over ${MAX_SERVER_FILE_BYTES}`,
      );
    }
    // Reads to the end, not to st.size: a file growing under us is read as far as the bound.
    const chunks: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const buf = new Uint8Array(64 * 1024);
      const { bytesRead } = await file.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > MAX_SERVER_FILE_BYTES) {
        throw new VerbusError(
          "FULL",
          `${what}: "${path}" grew over ${MAX_SERVER_FILE_BYTES} bytes`,
        );
      }
      chunks.push(buf.subarray(0, bytesRead));
    }
    const all = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    return { text: new TextDecoder().decode(all), key: statKey(st) };
  } finally {
    await file.close();
  }
}

function statKey(st: { ino: number | bigint | null; size: number; mtimeMs: number }): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}

/**
 * The `file://` naming service. Throws INVALID_ARGUMENT for an empty path, INVALID_OPTIONS for bad
 * options; a missing file is not an error until it is asked for (resolve rejects NOT_FOUND, a
 * watch reports it and picks the file up when it appears).
 */
export function fileNamingService(
  url: URL | string,
  options: FileNamingOptions = {},
): NamingService {
  const text = typeof url === "string" ? url : decodeURIComponent(url.href);
  const path = afterScheme(url, "file");
  if (path === "") throw new VerbusError("INVALID_ARGUMENT", `${text}: no file path`);
  const { pollMs, log } = commonOptions(options, text, 1_000);
  const { fileWatch = true } = parseOptions(fileSchema, options ?? {}, text);
  const watches = new WatchSet(text);

  async function load(): Promise<{ servers: ServerNode[]; key: string }> {
    const { text: body, key } = await readBounded(path, text);
    return { servers: parseServerFile(body, text), key };
  }

  return {
    url: text,
    async resolve() {
      watches.check();
      return (await load()).servers;
    },
    watch(watcher: NamingWatcher) {
      watches.check();
      let seen = ""; // stat key of the last read that parsed (or failed to: same file, same answer)
      let forced = true; // read even when the stat key is unchanged (first round, watch events)
      const following = follow({
        what: text,
        log,
        retryMs: () => pollMs,
        async ask() {
          let key: string;
          try {
            key = statKey(await stat(path));
          } catch (e) {
            seen = "";
            throw asVerbusError(e, "NOT_FOUND", `${text}: cannot stat "${path}"`);
          }
          if (key === seen && !forced) return { nextMs: pollMs };
          forced = false;
          seen = key;
          const got = await load();
          // Changed while read: read again soon rather than keep what may be a torn middle.
          if (got.key !== key) seen = "";
          return { servers: got.servers, nextMs: got.key !== key ? SETTLE_MS : pollMs };
        },
      }, watcher);
      const fsw = !fileWatch ? null : watchDirectory(path, log, () => {
        forced = true;
        settle();
      });
      let settleTimer: ReturnType<typeof setTimeout> | undefined;
      // Several events come per write; one read after they stop.
      const settle = () => {
        if (settleTimer !== undefined) clearTimeout(settleTimer);
        settleTimer = setTimeout(() => {
          settleTimer = undefined;
          following.wake();
        }, SETTLE_MS);
      };
      return watches.add(() => {
        following.stop();
        if (settleTimer !== undefined) clearTimeout(settleTimer);
        fsw?.close();
      });
    },
    close() {
      watches.close();
    },
  };
}

/**
 * An fs.watch on the directory of `path` calling `onChange` for events naming its file (or no
 * file), or null when the directory cannot be watched (polling alone then sees changes).
 */
function watchDirectory(
  path: string,
  log: (line: string) => void,
  onChange: () => void,
): FSWatcher | null {
  const name = basename(path);
  try {
    const w = fsWatch(dirname(path), { persistent: true }, (_event, file) => {
      if (file === null || file === undefined || String(file) === name) onChange();
    });
    w.on("error", (e: Error) => {
      log(`file://${path}: watching its directory failed (${e.message}); polling only`);
      w.close();
    });
    return w;
  } catch (e) {
    log(`file://${path}: cannot watch its directory (${(e as Error).message}); polling only`);
    return null;
  }
}
