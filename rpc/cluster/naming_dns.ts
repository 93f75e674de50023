/**
 * DNS naming services, re-asked every `pollMs` (default 5 s, brpc's `-ns_access_interval`):
 *
 * - `dns://HOST:PORT` — every A and AAAA address of HOST, each with PORT (brpc's domain naming
 *   service keeps IPv4 only; both families are kept here). `http://HOST[:PORT][/path]` is brpc's
 *   spelling of the same thing: port 80 when none, the path dropped.
 * - `dns+srv://_SERVICE._PROTO.NAME` — the SRV records of that name: the records of the lowest
 *   priority (the others are backups, RFC 2782), each target's A/AAAA addresses with the record's
 *   port, the record's weight as the tag when it is over 0 (so `wrr` and `wr` follow SRV weights).
 *
 * Addresses come from the system resolver (`getaddrinfo`, so /etc/hosts counts), or, when the
 * `dnsServers` option names servers (`["127.0.0.1:5353"]`), from those servers directly (SRV
 * always asks DNS servers: the system's unless named). Lists are sorted by address, since
 * resolvers rotate their answers and a rotation is not a change. A failed or empty answer keeps
 * the last list (a name that briefly resolves to nothing is more likely a DNS hiccup than a
 * fleet gone); every question has `timeoutMs`, and a stopped watch cancels its question.
 *
 * Threading: the JS thread that made it.
 * @module
 */
import dns from "node:dns";
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import type { NamingOptions, NamingService, NamingWatcher, ServerNode } from "./naming.ts";
import { serverNode } from "./naming.ts";
import {
  afterScheme,
  asVerbusError,
  commonOptions,
  follow,
  uniqueServers,
  WatchSet,
  withTimeout,
} from "./naming_follow.ts";

/** Options the DNS services add to {@link NamingOptions}. */
export interface DnsNamingOptions extends NamingOptions {
  /** DNS servers to ask (`IP` or `IP:PORT`, IPv6 as `[IP]:PORT`) instead of the system's. */
  dnsServers?: string[];
}

const dnsSchema = z.looseObject({
  dnsServers: z.array(z.string().min(1).max(100)).min(1).max(16).optional(),
});

const HOST =
  /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})?)(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})?)*\.?$/;

/** What a DNS URL asks for. */
type Target =
  | { kind: "host"; host: string; port: number }
  | { kind: "srv"; name: string };

/** Reads a `dns://`, `http://` or `dns+srv://` URL. Throws INVALID_ARGUMENT naming the fault. */
function parseTarget(text: string, scheme: string): Target {
  let rest = afterScheme(text, scheme);
  if (scheme === "dns+srv") {
    if (!HOST.test(rest) || rest.length > 253 || !rest.startsWith("_")) {
      throw new VerbusError("INVALID_ARGUMENT", `${text}: expected dns+srv://_SERVICE._PROTO.NAME`);
    }
    return { kind: "srv", name: rest };
  }
  if (scheme === "http") rest = rest.replace(/[/?#].*$/s, ""); // brpc drops the path
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/]+)(?::(\d{1,5}))?$/.exec(rest);
  const port = m?.[2] === undefined ? (scheme === "http" ? 80 : 0) : Number(m[2]);
  if (!m || port < 1 || port > 65535 || !(m[1].startsWith("[") || HOST.test(m[1]))) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `${text}: expected ${scheme}://HOST${scheme === "http" ? "[:PORT]" : ":PORT"}`,
    );
  }
  return { kind: "host", host: m[1], port };
}

/** `ip:port`, brackets around IPv6. */
function joinHostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** Rejects with TIMEOUT or the abort reason; cancels the resolver's questions when it does. */
function onResolver<T>(
  servers: string[] | undefined,
  timeoutMs: number,
  what: string,
  signal: AbortSignal,
  fn: (r: dns.promises.Resolver) => Promise<T>,
): Promise<T> {
  // One resolver per question: cancel() cancels all of a resolver's questions, and a watch's
  // question must not cancel a concurrent resolve().
  const r = new dns.promises.Resolver({ timeout: Math.max(1, timeoutMs), tries: 2 });
  if (servers) r.setServers(servers);
  return withTimeout(what, timeoutMs, signal, (s) => {
    s.addEventListener("abort", () => r.cancel(), { once: true });
    return fn(r);
  });
}

/** Codes by which a resolver says the name has no such record (not a failure to ask). */
const NO_DATA = new Set(["ENODATA", "ENOTFOUND"]);

/** The sorted `ip:port` nodes of `host`. */
async function addresses(
  host: string,
  port: number,
  servers: string[] | undefined,
  timeoutMs: number,
  signal: AbortSignal,
  tag = "",
): Promise<ServerNode[]> {
  const what = `DNS ${host}`;
  let ips: string[];
  if (host.startsWith("[")) {
    ips = [host.slice(1, -1)];
  } else if (servers === undefined) {
    const got = await withTimeout(
      what,
      timeoutMs,
      signal,
      () => dns.promises.lookup(host, { all: true }),
    );
    ips = got.map((a) => a.address);
  } else {
    const ask = (rr: "A" | "AAAA") =>
      onResolver(
        servers,
        timeoutMs,
        what,
        signal,
        (r) => rr === "A" ? r.resolve4(host) : r.resolve6(host),
      ).then(
        (a) => a,
        (e) => {
          if (NO_DATA.has((e as { code?: string }).code ?? "")) return [] as string[];
          throw e;
        },
      );
    const [v4, v6] = await Promise.all([ask("A"), ask("AAAA")]);
    ips = [...v4, ...v6];
  }
  return ips.map((ip) => serverNode(joinHostPort(ip, port), tag));
}

function sortNodes(nodes: ServerNode[]): ServerNode[] {
  return uniqueServers(nodes).sort((
    a,
    b,
  ) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

/** The servers a DNS target names now. Throws VerbusError (NOT_FOUND, TIMEOUT, CONNECT_FAILED). */
async function ask(
  target: Target,
  servers: string[] | undefined,
  timeoutMs: number,
  signal: AbortSignal,
  what: string,
): Promise<ServerNode[]> {
  try {
    let nodes: ServerNode[];
    if (target.kind === "host") {
      nodes = await addresses(target.host, target.port, servers, timeoutMs, signal);
    } else {
      const records = await onResolver(
        servers,
        timeoutMs,
        what,
        signal,
        (r) => r.resolveSrv(target.name),
      );
      // "." as target: the service is decidedly not available at this name (RFC 2782).
      const usable = records.filter((r) => r.name !== "" && r.name !== "." && r.port > 0);
      const best = Math.min(...usable.map((r) => r.priority));
      nodes = [];
      const failed: string[] = [];
      for (const r of usable.filter((r) => r.priority === best)) {
        try {
          const tag = r.weight > 0 ? String(r.weight) : "";
          nodes.push(...await addresses(r.name, r.port, servers, timeoutMs, signal, tag));
        } catch (e) {
          if (signal.aborted) throw e;
          failed.push(`${r.name}: ${(e as Error).message}`);
        }
      }
      if (nodes.length === 0 && failed.length > 0) {
        throw new VerbusError("NOT_FOUND", `${what}: no target resolved (${failed.join("; ")})`);
      }
    }
    if (nodes.length === 0) throw new VerbusError("NOT_FOUND", `${what}: no address in the answer`);
    return sortNodes(nodes);
  } catch (e) {
    if (e instanceof VerbusError) throw e;
    const code = (e as { code?: string }).code ?? "";
    throw asVerbusError(
      e,
      NO_DATA.has(code) ? "NOT_FOUND" : code === "ETIMEOUT" ? "TIMEOUT" : "CONNECT_FAILED",
      what,
    );
  }
}

function makeDns(scheme: string) {
  return (url: URL | string, options: DnsNamingOptions = {}): NamingService => {
    const text = typeof url === "string" ? url : decodeURIComponent(url.href);
    const target = parseTarget(text, scheme);
    const { pollMs, timeoutMs, log } = commonOptions(options, text);
    const { dnsServers } = parseOptions(dnsSchema, options, text);
    const watches = new WatchSet(text);
    if (dnsServers) {
      // Checked now so that a bad server is a configuration error, not a failure per round.
      try {
        new dns.promises.Resolver().setServers(dnsServers);
      } catch (e) {
        throw asVerbusError(e, "INVALID_OPTIONS", `${text}: dnsServers`);
      }
    }
    return {
      url: text,
      async resolve() {
        watches.check();
        const ac = new AbortController();
        const stop = watches.add(() => ac.abort(new VerbusError("CLOSED", `${text}: closed`)));
        try {
          return await ask(target, dnsServers, timeoutMs, ac.signal, text);
        } finally {
          stop();
        }
      },
      watch(watcher: NamingWatcher) {
        watches.check();
        const following = follow({
          what: text,
          log,
          retryMs: () => pollMs,
          async ask(signal) {
            return {
              servers: await ask(target, dnsServers, timeoutMs, signal, text),
              nextMs: pollMs,
            };
          },
        }, watcher);
        return watches.add(() => following.stop());
      },
      close() {
        watches.close();
      },
    };
  };
}

/** `dns://HOST:PORT`: every A/AAAA address of HOST. See the module doc. */
export const dnsNamingService: (url: URL | string, options?: DnsNamingOptions) => NamingService =
  makeDns("dns");
/** `http://HOST[:PORT]`: brpc's spelling of `dns://` (port 80 by default, path dropped). */
export const httpNamingService: (url: URL | string, options?: DnsNamingOptions) => NamingService =
  makeDns("http");
/** `dns+srv://_SERVICE._PROTO.NAME`: the SRV records of NAME. See the module doc. */
export const srvNamingService: (url: URL | string, options?: DnsNamingOptions) => NamingService =
  makeDns("dns+srv");
