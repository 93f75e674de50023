/**
 * `consul://NAME` — brpc's Consul naming service: `GET /v1/health/service/NAME?stale&passing` on
 * the agent, then the same as a blocking query (`&index=N&wait=60s`) that Consul answers when
 * the list changes or the wait ends. N is the `X-Consul-Index` of the last answer; an answer
 * without it is refused, as brpc does.
 *
 * Each entry's server is `Service.Address:Service.Port`, or `Node.Address` when the service has
 * no address of its own (Consul's rule; brpc skips such entries); the tag is the first of
 * `Service.Tags`, as brpc reads it. Entries that cannot be read are skipped (and logged); an
 * answer whose entries are all unreadable keeps the last list, as brpc refuses it.
 *
 * Consul's rules for blocking clients are kept: an index that goes backwards resets the loop
 * (the next question is not blocking), an index under 1 is taken as 1, and questions that come
 * back fast without news are spaced by `retryMs`. A failure (no agent, a status other than 200,
 * a body that is not the JSON array, no answer within the wait plus `timeoutMs`) keeps the last
 * list and is retried after `retryMs` (brpc's `-consul_retry_interval_ms`, 500), doubling to
 * `maxBackoffMs`, each delay spread by ±20 % so that clients do not retry in step.
 *
 * The agent: the `consulAgent` option, else `CONSUL_HTTP_ADDR` (Consul's own variable), else
 * brpc's default `http://127.0.0.1:8500`. An ACL token: `consulToken`, else `CONSUL_HTTP_TOKEN`
 * (sent as `X-Consul-Token`, never logged).
 *
 * Threading: the JS thread that made it.
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import { backoffMs } from "../../util/backoff.ts";
import { getEnv } from "../../util/runtime.ts";
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

/** Options the Consul service adds to {@link NamingOptions}. */
export interface ConsulNamingOptions extends NamingOptions {
  /** The agent's URL (`http://127.0.0.1:8500`; `HOST:PORT` means http). */
  consulAgent?: string;
  /** brpc's `-consul_url_parameter` without its `?` (default `stale&passing`). */
  consulParams?: string;
  /** brpc's `-consul_blocking_query_wait_secs` (default 60). */
  consulWaitS?: number;
  /** ACL token sent as `X-Consul-Token`. */
  consulToken?: string;
  /** Wait after a failure and between fast answers without news, ms (default 500). */
  retryMs?: number;
  /** Longest wait after failures in a row, ms (default 30,000). */
  maxBackoffMs?: number;
}

const consulSchema = z.looseObject({
  consulAgent: z.string().min(1).max(2048).optional(),
  consulParams: z.string().max(2048).regex(/^[^?#\s]*$/, "no '?', '#' or blanks").optional(),
  consulWaitS: z.number().int().min(1).max(600).optional(),
  consulToken: z.string().max(4096).optional(),
  retryMs: z.number().int().min(1).max(3_600_000).optional(),
  maxBackoffMs: z.number().int().min(1).max(3_600_000).optional(),
});

/** The shortest time between two questions of one watch, ms. */
const MIN_GAP_MS = 100;

/** An answer larger than this is refused (bounds memory against a hostile or broken agent). */
export const MAX_CONSUL_ANSWER_BYTES: number = 16 * 1024 * 1024;

/** Reads the body to its end, refusing it past the bound. */
async function boundedText(res: Response, what: string): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > MAX_CONSUL_ANSWER_BYTES) {
    await res.body?.cancel();
    throw new VerbusError("PROTOCOL", `${what}: answer of ${declared} bytes is too large`);
  }
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > MAX_CONSUL_ANSWER_BYTES) {
      await reader.cancel();
      throw new VerbusError("PROTOCOL", `${what}: answer over ${MAX_CONSUL_ANSWER_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}

/**
 * The servers of one `/v1/health/service` answer. Throws PROTOCOL when it is not a JSON array or
 * when it has entries and none can be read; `log` hears of each entry skipped.
 */
export function parseConsulServices(
  body: string,
  what: string,
  log: (line: string) => void,
): ServerNode[] {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new VerbusError("PROTOCOL", `${what}: the answer is not JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(doc)) throw new VerbusError("PROTOCOL", `${what}: the answer is not an array`);
  const out: ServerNode[] = [];
  doc.forEach((entry, i) => {
    const why = readEntry(entry, out);
    if (why) log(`${what}: entry ${i} skipped: ${why}`);
  });
  if (out.length === 0 && doc.length > 0) {
    throw new VerbusError("PROTOCOL", `${what}: none of the ${doc.length} entries has a server`);
  }
  return uniqueServers(out);
}

/** Adds the server of one entry to `out`; returns why it cannot, or "". */
function readEntry(entry: unknown, out: ServerNode[]): string {
  const e = entry as { Service?: unknown; Node?: unknown } | null;
  const svc = e?.Service as { Address?: unknown; Port?: unknown; Tags?: unknown } | undefined;
  if (typeof svc !== "object" || svc === null) return "no Service";
  const nodeAddr = (e?.Node as { Address?: unknown } | undefined)?.Address;
  const host = typeof svc.Address === "string" && svc.Address !== ""
    ? svc.Address
    : typeof nodeAddr === "string"
    ? nodeAddr
    : "";
  if (host === "" || host.length > 255) return "no Service.Address nor Node.Address";
  if (typeof svc.Port !== "number" || !Number.isInteger(svc.Port)) return "no Service.Port";
  let tag = "";
  if (svc.Tags !== undefined && svc.Tags !== null) {
    if (!Array.isArray(svc.Tags)) return "Service.Tags is not an array";
    if (svc.Tags.length > 0) {
      if (typeof svc.Tags[0] !== "string") return "the first of Service.Tags is not a string";
      tag = svc.Tags[0].slice(0, 1024);
    }
  }
  const address = host.includes(":") && !host.startsWith("[")
    ? `[${host}]:${svc.Port}`
    : `${host}:${svc.Port}`;
  try {
    out.push(serverNode(address, tag));
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}

/** The `consul://` naming service. Throws INVALID_ARGUMENT / INVALID_OPTIONS naming what is bad. */
export function consulNamingService(
  url: URL | string,
  options: ConsulNamingOptions = {},
): NamingService {
  const text = typeof url === "string" ? url : decodeURIComponent(url.href);
  const name = afterScheme(url, "consul");
  if (!/^[A-Za-z0-9_.-]{1,256}$/.test(name)) {
    throw new VerbusError("INVALID_ARGUMENT", `${text}: expected consul://SERVICE_NAME`);
  }
  const { timeoutMs, log } = commonOptions(options, text);
  const o = parseOptions(consulSchema, options ?? {}, text);
  let agent = o.consulAgent ?? getEnv("CONSUL_HTTP_ADDR") ?? "http://127.0.0.1:8500";
  if (!/^https?:\/\//i.test(agent)) agent = `http://${agent}`;
  let base: URL;
  try {
    base = new URL(`/v1/health/service/${encodeURIComponent(name)}`, agent);
  } catch {
    throw new VerbusError("INVALID_OPTIONS", `${text}: consulAgent "${agent}" is not a URL`);
  }
  const params = o.consulParams ?? "stale&passing";
  const waitS = o.consulWaitS ?? 60;
  const token = o.consulToken ?? getEnv("CONSUL_HTTP_TOKEN");
  const retryMs = o.retryMs ?? 500;
  const maxBackoffMs = o.maxBackoffMs ?? 30_000;
  const watches = new WatchSet(text);

  /** One question; index "" asks without blocking. */
  async function query(
    index: string,
    signal: AbortSignal,
  ): Promise<{ index: string; servers: ServerNode[] }> {
    const blocking = index !== "";
    const q = [params, blocking ? `index=${index}&wait=${waitS}s` : ""].filter(Boolean).join("&");
    const target = `${base.href}${q ? `?${q}` : ""}`;
    const what = `${text}: GET ${target}`;
    // Consul adds up to wait/16 of jitter to a blocking query; past that the agent is stuck.
    const limit = blocking ? Math.ceil(waitS * 1000 * 17 / 16) + timeoutMs : timeoutMs;
    return await withTimeout(what, limit, signal, async (s) => {
      let res: Response;
      try {
        res = await fetch(target, { signal: s, headers: token ? { "X-Consul-Token": token } : {} });
      } catch (e) {
        throw s.aborted ? s.reason : asVerbusError(e, "CONNECT_FAILED", what);
      }
      if (res.status !== 200) {
        const body = await boundedText(res, what).catch(() => "");
        throw new VerbusError(
          "PROTOCOL",
          `${what}: status ${res.status} (${body.slice(0, 200).replace(/\s+/g, " ")})`,
        );
      }
      const header = res.headers.get("x-consul-index");
      if (header === null || !/^\d{1,20}$/.test(header.trim())) {
        await res.body?.cancel();
        throw new VerbusError("PROTOCOL", `${what}: no X-Consul-Index in the answer`);
      }
      const body = await boundedText(res, what);
      return { index: header.trim(), servers: parseConsulServices(body, what, log) };
    });
  }

  return {
    url: text,
    async resolve() {
      watches.check();
      const ac = new AbortController();
      const stop = watches.add(() => ac.abort(new VerbusError("CLOSED", `${text}: closed`)));
      try {
        return (await query("", ac.signal)).servers;
      } finally {
        stop();
      }
    },
    watch(watcher: NamingWatcher) {
      watches.check();
      let index = "";
      const following = follow({
        what: text,
        log,
        retryMs: (failures) => backoffMs(failures, retryMs, maxBackoffMs),
        async ask(signal) {
          const started = Date.now();
          let got;
          try {
            got = await query(index, signal);
          } catch (e) {
            index = ""; // start over without blocking: the agent may have restarted
            throw e;
          }
          const took = Date.now() - started;
          const fast = took < 1_000;
          const before = index === "" ? 0n : BigInt(index);
          const now = BigInt(got.index);
          if (index !== "" && now === before) {
            // The wait ended without news; a fast one means a misbehaving agent: space them.
            return { nextMs: fast ? retryMs : 0 };
          }
          // Backwards: Consul's rule is to start over (the next question does not block);
          // under 1: block on 1, never on 0, or the agent answers at once forever.
          index = index !== "" && now < before ? "" : now < 1n ? "1" : now.toString();
          // News at once, but never more than one question per MIN_GAP_MS: an agent that
          // answers every blocking question at once with a new index must not spin this loop.
          const nextMs = fast && index === "" ? retryMs : Math.max(0, MIN_GAP_MS - took);
          return { servers: got.servers, nextMs };
        },
      }, watcher);
      return watches.add(() => following.stop());
    },
    close() {
      watches.close();
    },
  };
}
