/**
 * `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`: the servers of a service are the keys under PREFIX in
 * etcd v3 (spoken over its JSON gateway, see `etcd_gateway.ts`).
 *
 * Key/value layout (what `etcd_register.ts` writes): key `PREFIX/<address>`, value JSON
 * `{"address":"host:port","tag":"…"}`. Also read, for keys others write: a value that is a brpc
 * server line (`host:port tag`), or an empty value (the address is the rest of the key). A key
 * whose value is none of these is skipped and logged once; it never fails the list.
 *
 * How it follows: one range over the prefix (`/v3/kv/range`), then one watch
 * (`/v3/watch`, a streamed answer of JSON lines) from the range's revision + 1, so a change is
 * seen as it happens, without polling. A broken stream, a failed range or a dead etcd is reported
 * through `onError` (once per failed round), the last list stays in force, and the service ranges
 * and watches again after a backoff (100 ms doubling to `maxBackoffMs`), trying the next endpoint.
 * A watch cancelled by compaction ranges again. A watch that has been silent for `idleMs` is
 * replaced by a new one from the same revision, so a hung etcd (alive socket, no answers) is
 * found within `idleMs + timeoutMs`.
 *
 * Threading: the JS thread that created it; watcher callbacks run on it.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { backoffMs } from "../../util/backoff.ts";
import {
  b64,
  deadline,
  etcdPost,
  etcdStream,
  type EtcdTarget,
  int64,
  obj,
  parseEtcdUrl,
  prefixEnd,
  unb64,
} from "./etcd_gateway.ts";
import {
  type NamingOptions,
  type NamingService,
  type NamingWatcher,
  parseServerLine,
  type ServerNode,
  serverNode,
} from "./naming.ts";

/** Options of the etcd naming service (beyond {@link NamingOptions}). */
export interface EtcdNamingOptions extends NamingOptions {
  /** Longest wait between two failed rounds, ms (default 5,000). */
  maxBackoffMs?: number;
  /** A watch silent this long is replaced by a new one, ms (default 60,000). */
  idleMs?: number;
}

/** Why one watch ended without an error. */
type WatchEnd = "idle" | "compacted";

/**
 * The server a key/value pair names (see the module doc), or null when the value names none.
 * Throws INVALID_ARGUMENT naming the key when its value is malformed.
 */
export function nodeFromKv(key: string, value: string, prefix: string): ServerNode | null {
  const text = value.trim();
  let line: string;
  if (text === "") line = key.startsWith(prefix) ? key.slice(prefix.length) : key;
  else if (text.startsWith("{")) {
    let v: Record<string, unknown>;
    try {
      v = obj(JSON.parse(text));
    } catch {
      throw new VerbusError("INVALID_ARGUMENT", `etcd key ${key}: value is not JSON`);
    }
    const tag = typeof v.tag === "string"
      ? v.tag
      : typeof v.weight === "number"
      ? `${v.weight}`
      : "";
    if (typeof v.address !== "string") {
      throw new VerbusError("INVALID_ARGUMENT", `etcd key ${key}: value has no "address"`);
    }
    try {
      return serverNode(v.address, tag.trim());
    } catch (e) {
      throw new VerbusError("INVALID_ARGUMENT", `etcd key ${key}: ${(e as Error).message}`);
    }
  } else line = text.split(/\r?\n/)[0];
  try {
    return parseServerLine(line);
  } catch (e) {
    throw new VerbusError("INVALID_ARGUMENT", `etcd key ${key}: ${(e as Error).message}`);
  }
}

/** The naming service of one etcd prefix. Make it with {@link etcdNaming}. */
export class EtcdNamingService implements NamingService {
  readonly url: string;
  readonly #target: EtcdTarget;
  readonly #timeoutMs: number;
  readonly #maxBackoffMs: number;
  readonly #idleMs: number;
  readonly #log: (line: string) => void;
  readonly #watchers = new Set<NamingWatcher>();
  /** Fires on close(): every request and stream of the service ends. */
  readonly #closed = new AbortController();
  /** Key → server, as of {@link #revision}. */
  #nodes = new Map<string, ServerNode>();
  #revision = 0n;
  /** The last list told to watchers (its JSON), null before the first. */
  #told: string | null = null;
  #endpoint = 0;
  /** The running follow loop's stop, or null when no loop runs. */
  #loop: AbortController | null = null;
  #ranges = 0;
  #watches = 0;
  /** Keys whose bad value was logged already (bounded: cleared when it grows past 1,000). */
  readonly #badKeys = new Set<string>();

  constructor(url: string, options: EtcdNamingOptions = {}) {
    this.url = url;
    this.#target = parseEtcdUrl(url);
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#maxBackoffMs = options.maxBackoffMs ?? 5000;
    this.#idleMs = options.idleMs ?? 60_000;
    this.#log = options.log ?? (() => {});
    for (
      const [k, v] of [["timeoutMs", this.#timeoutMs], ["maxBackoffMs", this.#maxBackoffMs], [
        "idleMs",
        this.#idleMs,
      ]] as const
    ) {
      if (!(Number.isFinite(v) && v > 0)) {
        throw new VerbusError("INVALID_ARGUMENT", `etcd naming ${url}: ${k} must be > 0, got ${v}`);
      }
    }
  }

  /** The key prefix the servers live under (ends with "/"). */
  get prefix(): string {
    return this.#target.prefix;
  }

  /** Ranges and watches asked so far (for logs and tests: a healthy follow asks few). */
  get stats(): { ranges: number; watches: number } {
    return { ranges: this.#ranges, watches: this.#watches };
  }

  async resolve(): Promise<ServerNode[]> {
    if (this.#closed.signal.aborted) throw this.#closedError();
    let last: unknown;
    for (let i = 0; i < this.#target.endpoints.length; i++) {
      const endpoint = this.#target.endpoints[(this.#endpoint + i) % this.#target.endpoints.length];
      try {
        const { nodes } = await this.#range(endpoint, this.#closed.signal);
        return sortedNodes(nodes);
      } catch (e) {
        last = e;
        if (this.#closed.signal.aborted) throw this.#closedError();
      }
    }
    throw last;
  }

  watch(watcher: NamingWatcher): () => void {
    if (this.#closed.signal.aborted) throw this.#closedError();
    this.#watchers.add(watcher);
    if (this.#told !== null) {
      const list = JSON.parse(this.#told) as ServerNode[];
      queueMicrotask(() => this.#watchers.has(watcher) && watcher.onServers(list));
    }
    if (this.#loop === null) {
      const loop = new AbortController();
      this.#loop = loop;
      this.#follow(loop.signal).finally(() => {
        if (this.#loop === loop) this.#loop = null;
      });
    }
    return () => {
      this.#watchers.delete(watcher);
      if (this.#watchers.size === 0) {
        this.#loop?.abort();
        this.#loop = null;
        this.#told = null; // a later watcher starts from a fresh range
      }
    };
  }

  close(): void {
    this.#closed.abort(this.#closedError());
    this.#loop?.abort();
    this.#loop = null;
    this.#watchers.clear();
  }

  #closedError(): VerbusError {
    return new VerbusError("CLOSED", `etcd naming ${this.url}: closed`);
  }

  /**
   * Range, watch, and again on every failure, until `stop` fires (close() and the last
   * unwatch fire it). Never throws.
   */
  async #follow(stop: AbortSignal): Promise<void> {
    let failures = 0;
    let needRange = true;
    while (!stop.aborted && !this.#closed.signal.aborted) {
      const endpoint = this.#target.endpoints[this.#endpoint];
      try {
        if (needRange) {
          const r = await this.#range(endpoint, stop);
          if (stop.aborted) return;
          this.#nodes = r.nodes;
          this.#revision = r.revision;
          needRange = false;
          this.#tell();
        }
        const end = await this.#watchOnce(endpoint, stop);
        if (end === "compacted") needRange = true;
        failures = 0;
      } catch (e) {
        if (stop.aborted || this.#closed.signal.aborted) return;
        needRange = true;
        failures++;
        this.#endpoint = (this.#endpoint + 1) % this.#target.endpoints.length;
        const err = e instanceof VerbusError
          ? e
          : new VerbusError("PROTOCOL", `etcd naming ${this.url}: ${e}`, { cause: e });
        this.#log(`etcd naming ${this.url}: ${err.message} (keeping the last list; retrying)`);
        for (const w of [...this.#watchers]) w.onError?.(err);
        await sleep(backoffMs(failures, 100, this.#maxBackoffMs), stop);
      }
    }
  }

  /** One range over the prefix: the servers under it and the store revision they are of. */
  async #range(
    endpoint: string,
    signal: AbortSignal,
  ): Promise<{ nodes: Map<string, ServerNode>; revision: bigint }> {
    const prefix = this.#target.prefix;
    this.#ranges++;
    const answer = await etcdPost(
      endpoint,
      "/v3/kv/range",
      { key: b64(prefix), range_end: prefixEnd(prefix) },
      this.#timeoutMs,
      signal,
    );
    const nodes = new Map<string, ServerNode>();
    const kvs = Array.isArray(answer.kvs) ? answer.kvs : [];
    for (const kv of kvs) this.#put(nodes, obj(kv));
    return { nodes, revision: int64(obj(answer.header).revision, "header.revision") };
  }

  /** Adds the server of one key/value to `nodes` (a bad value is logged once and skipped). */
  #put(nodes: Map<string, ServerNode>, kv: Record<string, unknown>): void {
    const key = unb64(kv.key);
    try {
      const node = nodeFromKv(key, unb64(kv.value), this.#target.prefix);
      if (node) nodes.set(key, node);
      else nodes.delete(key);
    } catch (e) {
      nodes.delete(key);
      if (this.#badKeys.size > 1000) this.#badKeys.clear();
      if (!this.#badKeys.has(key)) {
        this.#badKeys.add(key);
        this.#log(`etcd naming ${this.url}: skipped: ${(e as Error).message}`);
      }
    }
  }

  /**
   * One watch from {@link #revision} + 1, applying each change as it comes. Returns when the
   * watch was idle for `idleMs` or cancelled by compaction; throws when it breaks.
   */
  async #watchOnce(endpoint: string, signal: AbortSignal): Promise<WatchEnd> {
    const prefix = this.#target.prefix;
    const body = {
      create_request: {
        key: b64(prefix),
        range_end: prefixEnd(prefix),
        start_revision: String(this.#revision + 1n),
      },
    };
    this.#watches++;
    const ctl = new AbortController();
    const link = deadline(signal, 0);
    link.signal.addEventListener("abort", () => ctl.abort(), { once: true });
    let end: WatchEnd | "unanswered" | null = null;
    // Until etcd confirms the watch, `timeoutMs`; then `idleMs` of silence ends it quietly.
    let timer = setTimeout(() => ((end = "unanswered"), ctl.abort()), this.#timeoutMs);
    try {
      for await (
        const r of etcdStream(endpoint, "/v3/watch", body, this.#timeoutMs, ctl.signal)
      ) {
        clearTimeout(timer);
        timer = setTimeout(() => ((end = "idle"), ctl.abort()), this.#idleMs);
        if (r.canceled === true) {
          if (r.compact_revision !== undefined && r.compact_revision !== "0") return "compacted";
          throw new VerbusError(
            "PROTOCOL",
            `etcd at ${endpoint} cancelled the watch: ${String(r.cancel_reason ?? "no reason")}`,
          );
        }
        this.#apply(r);
      }
    } catch (e) {
      if (end === null || signal.aborted) throw e;
    } finally {
      clearTimeout(timer);
      link.done();
    }
    if (signal.aborted) return "idle";
    if (end === "idle") return "idle";
    if (end === "unanswered") {
      throw new VerbusError(
        "TIMEOUT",
        `etcd at ${endpoint}: watch not confirmed in ${this.#timeoutMs} ms`,
      );
    }
    throw new VerbusError("CONNECTION_CLOSED", `etcd at ${endpoint} ended the watch stream`);
  }

  /** Applies the events of one watch answer and tells watchers when the list changed. */
  #apply(r: Record<string, unknown>): void {
    const events = Array.isArray(r.events) ? r.events : [];
    // Only our own events move the revision: a watch started again after a pause must see every
    // change under the prefix since the last one applied (or learn that etcd compacted them).
    let revision = this.#revision;
    for (const ev of events) {
      const e = obj(ev);
      const kv = obj(e.kv);
      const mod = int64(kv.mod_revision, "kv.mod_revision");
      if (mod > revision) revision = mod;
      if (e.type === "DELETE") this.#nodes.delete(unb64(kv.key));
      else this.#put(this.#nodes, kv);
    }
    if (revision > this.#revision) this.#revision = revision;
    if (events.length > 0) this.#tell();
  }

  /** Tells every watcher the list, when it differs from the last one told. */
  #tell(): void {
    const list = sortedNodes(this.#nodes);
    const text = JSON.stringify(list);
    if (text === this.#told) return;
    this.#told = text;
    for (const w of [...this.#watchers]) w.onServers(list);
  }
}

/** The servers of `nodes`, one per address (the first key wins), ordered by address. */
function sortedNodes(nodes: Map<string, ServerNode>): ServerNode[] {
  const byAddress = new Map<string, ServerNode>();
  for (const n of nodes.values()) if (!byAddress.has(n.address)) byAddress.set(n.address, n);
  return [...byAddress.values()].sort((a, b) =>
    a.address < b.address ? -1 : a.address > b.address ? 1 : 0
  );
}

/** Sleeps `ms`, or less when `signal` fires (the timer is released either way). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The etcd naming service of `url` (`etcd://HOST:PORT/PREFIX`). Throws INVALID_ARGUMENT. */
export function etcdNaming(url: URL | string, options: EtcdNamingOptions = {}): EtcdNamingService {
  return new EtcdNamingService(String(url), options);
}
