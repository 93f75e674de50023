/**
 * `list://ADDR [TAG],ADDR [TAG],…` — a fixed list written in the URL, brpc's syntax unchanged:
 * entries split at commas, each `HOST:PORT` (IPv6 in brackets) and an optional tag after blanks
 * (a `#` ends the tag). The list never changes: a watch is told it once.
 *
 * brpc logs and skips an entry it cannot read; here the URL is refused, naming the entry, since
 * a fixed list with a typo is a configuration error better seen at start than as a missing
 * server. A repeated address keeps its first entry.
 *
 * Threading: the JS thread that made it.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { NamingOptions, NamingService, NamingWatcher, ServerNode } from "./naming.ts";
import { parseServerLine } from "./naming.ts";
import { afterScheme, commonOptions, uniqueServers, WatchSet } from "./naming_follow.ts";

/**
 * The servers of a `list://` URL. Throws INVALID_ARGUMENT naming the first entry that is not
 * `HOST:PORT [TAG]` (and its place in the list).
 */
export function parseServerList(url: URL | string): ServerNode[] {
  const entries = afterScheme(url, "list").split(",");
  const out: ServerNode[] = [];
  entries.forEach((entry, i) => {
    try {
      const node = parseServerLine(entry);
      if (node) out.push(node);
    } catch (e) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `list:// entry ${i + 1} "${entry.trim()}": expected HOST:PORT [TAG]`,
        { cause: e },
      );
    }
  });
  return uniqueServers(out);
}

/**
 * The `list://` naming service. Throws INVALID_ARGUMENT for a bad entry, INVALID_OPTIONS for bad
 * options. Holds no timer or socket: a watch is told the list on the next turn of the event loop.
 */
export function listNamingService(url: URL | string, options: NamingOptions = {}): NamingService {
  const text = typeof url === "string" ? url : decodeURIComponent(url.href);
  const servers = parseServerList(url);
  const { log } = commonOptions(options, text);
  const watches = new WatchSet(text);
  return {
    url: text,
    // deno-lint-ignore require-await
    async resolve() {
      watches.check(); // as a rejection, like every other service's
      return servers.slice();
    },
    watch(watcher: NamingWatcher) {
      let stopped = false;
      const stop = watches.add(() => stopped = true);
      // Told asynchronously, as every other service tells its first list: a consumer may
      // rely on watch() returning before the first onServers.
      queueMicrotask(() => {
        if (stopped) return;
        try {
          watcher.onServers(servers.slice());
        } catch (e) {
          log(`${text}: watcher threw: ${e instanceof Error ? e.message : String(e)}`);
        }
      });
      return stop;
    },
    close() {
      watches.close();
    },
  };
}
