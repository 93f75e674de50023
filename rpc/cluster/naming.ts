/**
 * Naming services: where the servers of a service are, as brpc's `NamingService` and grpc-js's
 * resolvers have it. A naming service is chosen by the scheme of its URL (brpc's syntax, plus
 * `etcd://`): `list://a:1,b:2 tag`, `file://path`, `dns://host:port`, `etcd://host:port/prefix`,
 * `consul://NAME`. Each lives in a file of its own (`naming_<scheme>.ts`) and registers itself in
 * {@link NAMING_SCHEMES}; this file holds the contract and the URL dispatch only.
 *
 * A service yields the whole list of servers each time it changes (never a diff): the consumer
 * (the cluster client) diffs it against the servers it has. An empty list is a real answer (no
 * server is registered); a failure to ask is not — it is reported through `onError` and the last
 * good list stays in force, as brpc keeps its servers when a naming service fails.
 *
 * Threading: the JS thread that created the service; callbacks run on it.
 * @module
 */
import { VerbusError } from "../../errors.ts";

/** One server of a service. */
export interface ServerNode {
  /** `host:port` (IPv6 in brackets: `[::1]:8000`). The key of the server everywhere. */
  readonly address: string;
  /** brpc's tag: the text after the address (`1.2.3.4:80 tag`); "" when none. */
  readonly tag: string;
  /**
   * The weight the weighted balancers use: the tag read as a positive integer when it is one
   * (brpc's wrr and wr do so), else 1.
   */
  readonly weight: number;
}

/** What a consumer gives {@link NamingService.watch}. */
export interface NamingWatcher {
  /** The full current list, each time it changes (and once at the start). */
  onServers(servers: readonly ServerNode[]): void;
  /** Asking failed (the last list stays in force); called at most once per failed round. */
  onError?(error: VerbusError): void;
}

/** A source of the server list of one service. */
export interface NamingService {
  /** The URL it was made from (for logs and errors). */
  readonly url: string;
  /** The current list, asked once. Throws VerbusError (NOT_FOUND, CONNECT_FAILED, PROTOCOL…). */
  resolve(): Promise<ServerNode[]>;
  /**
   * Follows the list: `watcher.onServers` with the first list, then with each change, until the
   * returned function is called (safe twice). Polling services re-ask every `pollMs` (default
   * 5 s, brpc's `-ns_access_interval`); watching services (file, etcd, consul) follow changes.
   */
  watch(watcher: NamingWatcher): () => void;
  /** Stops every watch and releases what the service holds (sockets, timers). Safe twice. */
  close(): void;
}

/** Options every naming service takes (each may add its own through its factory). */
export interface NamingOptions {
  /** Poll interval of polling services, ms (default 5,000). */
  pollMs?: number;
  /** Timeout of one question to a remote naming service, ms (default 5,000). */
  timeoutMs?: number;
  /** Where problems are reported (default: nowhere; `onError` still sees them). */
  log?: (line: string) => void;
  /** Each scheme's own options (`dnsServers`, `fileWatch`, `consulAgent`, …), checked by it. */
  [schemeOption: string]: unknown;
}

/** Makes a naming service from a URL of its scheme. Throws INVALID_ARGUMENT naming what is wrong. */
export type NamingFactory = (url: URL | string, options: NamingOptions) => NamingService;

/** The naming services by URL scheme (without the colon). Each `naming_<scheme>.ts` adds itself. */
export const NAMING_SCHEMES: Map<string, NamingFactory> = new Map();

/**
 * The naming service for `url`, by its scheme. Throws INVALID_ARGUMENT for a URL that does not
 * parse or a scheme no service handles (naming the schemes that exist).
 */
export function namingService(url: string, options: NamingOptions = {}): NamingService {
  const m = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  const factory = m ? NAMING_SCHEMES.get(m[1].toLowerCase()) : undefined;
  if (!factory) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `naming service "${url}": expected one of ${
        [...NAMING_SCHEMES.keys()].map((s) => `${s}://`).join(", ")
      }`,
    );
  }
  return factory(url, options);
}

/**
 * One server line as brpc writes it: `ADDRESS [TAG]` (spaces or tabs between; a `#` after the
 * address starts a comment, as in brpc's files). Returns null for a blank line or a `#` comment;
 * throws INVALID_ARGUMENT naming the line when the address is not `host:port` with a port in
 * 1-65535.
 */
export function parseServerLine(line: string): ServerNode | null {
  const text = line.trim();
  if (text === "" || text.startsWith("#")) return null;
  const end = text.search(/\s/);
  const address = end < 0 ? text : text.slice(0, end);
  const rest = end < 0 ? "" : text.slice(end);
  const hash = rest.indexOf("#");
  try {
    return serverNode(address, (hash < 0 ? rest : rest.slice(0, hash)).trim());
  } catch {
    throw new VerbusError("INVALID_ARGUMENT", `server "${text}": expected HOST:PORT [TAG]`);
  }
}

/**
 * A server from an address and a tag that came apart (a registry's JSON, a DNS answer): the same
 * checks and the same weight rule as {@link parseServerLine}. Throws INVALID_ARGUMENT naming the
 * address when it is not `host:port` (IPv6 in brackets) with a port in 1-65535.
 */
export function serverNode(address: string, tag = ""): ServerNode {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]#]+):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535) {
    throw new VerbusError("INVALID_ARGUMENT", `server "${address}": expected HOST:PORT`);
  }
  const w = /^\d{1,9}$/.test(tag) ? Number(tag) : 0;
  return { address, tag, weight: w > 0 ? w : 1 };
}
