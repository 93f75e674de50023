/**
 * A server registers itself in etcd under a lease (what `serve({ register })` and `verbus serve
 * --register` do): grant a lease of `ttlSeconds` (`/v3/lease/grant`), put the key
 * `PREFIX<address>` with the value `{"address":"host:port","tag":"…"}` under it (`/v3/kv/put`; the
 * layout `naming_etcd.ts` reads), keep the lease alive every TTL/3 (`/v3/lease/keepalive`), and
 * revoke it on a clean stop (`/v3/lease/revoke`): the key goes at once. A killed server's key
 * goes when its lease ends, at most `ttlSeconds` later.
 *
 * A failure at the start is the caller's error; later failures never throw: a failed keepalive
 * is logged (once per spell, and again when it recovers) and tried again at the next tick, and a
 * lease that ended meanwhile (etcd was away longer than the TTL) is replaced by a new one and the
 * key put again.
 *
 * Threading: the JS thread that registered; its timer and requests are released by stop().
 * @module
 */
import { networkInterfaces } from "node:os";
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import type { Logger } from "../protocol/dispatch.ts";
import { b64, etcdPost, type EtcdTarget, int64, obj, parseEtcdUrl } from "./etcd_gateway.ts";
import { parseServerLine } from "./naming.ts";

/** The `register` option of `serve()`: an `etcd://HOST:PORT/PREFIX` URL, or that with details. */
export const registerOptionSchema: z.ZodOptional<
  z.ZodUnion<
    readonly [
      z.ZodString,
      z.ZodObject<{
        url: z.ZodString;
        ttlSeconds: z.ZodDefault<z.ZodNumber>;
        tag: z.ZodDefault<z.ZodString>;
        address: z.ZodOptional<z.ZodString>;
        timeoutMs: z.ZodDefault<z.ZodNumber>;
      }, z.core.$strict>,
    ]
  >
> = z.union([
  z.string().regex(/^etcd:\/\//i, "expected etcd://HOST:PORT/PREFIX"),
  z.object({
    /** `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`. */
    url: z.string().regex(/^etcd:\/\//i, "expected etcd://HOST:PORT/PREFIX"),
    /** Lease TTL: a killed server's key lives at most this long (default 10 s). */
    ttlSeconds: z.number().int().min(1).max(3600).default(10),
    /** brpc's tag of this server (the weight of the weighted balancers); default none. */
    tag: z.string().regex(/^[^\s]*$/, "expected a tag without spaces").default(""),
    /**
     * The `host:port` clients should dial, when the listening host is not it (a wildcard
     * address, a NAT). Default: the listening host and port; for 0.0.0.0 / ::, this host's
     * first non-loopback address.
     */
    address: z.string().min(3).optional(),
    /** Deadline of each request to etcd, ms (default 5,000). */
    timeoutMs: z.number().int().positive().default(5000),
  }).strict(),
]).optional();

/** The validated `register` option. */
export type RegisterOption = NonNullable<z.output<typeof registerOptionSchema>>;

/**
 * The address clients should dial for a server listening on `host`:`port`: `host:port` (IPv6 in
 * brackets), and for a wildcard host this machine's first non-internal address of that family
 * (IPv4 first for 0.0.0.0). Throws INVALID_OPTIONS when a wildcard has no such address.
 */
export function advertisedAddress(host: string, port: number): string {
  let h = host.replace(/^\[(.*)\]$/, "$1");
  if (h === "0.0.0.0" || h === "::" || h === "") {
    const all = Object.values(networkInterfaces()).flat().filter((i) => i && !i.internal);
    const v4 = all.find((i) => i!.family === "IPv4");
    const v6 = all.find((i) => i!.family === "IPv6" && !i!.address.startsWith("fe80"));
    const pick = h === "::" ? v6 ?? v4 : v4;
    if (!pick) {
      throw new VerbusError(
        "INVALID_OPTIONS",
        `register: the server listens on ${host}, and this host has no other address to ` +
          `advertise; pass register.address`,
      );
    }
    h = pick.address;
  }
  return h.includes(":") ? `[${h}]:${port}` : `${h}:${port}`;
}

/** A live registration. Made by {@link registerInEtcd}. */
export class EtcdRegistration {
  /** The etcd key this server is under. */
  readonly key: string;
  /** The address it advertised. */
  readonly address: string;
  readonly #target: EtcdTarget;
  readonly #value: string;
  readonly #ttl: number;
  readonly #timeoutMs: number;
  readonly #logger: Logger;
  /** Fires on stop(): every request in flight ends. */
  readonly #stopped = new AbortController();
  #lease = "0";
  #endpoint = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The keepalive spell is failing (logged once; recovery is logged). */
  #failing = false;
  #stopping: Promise<void> | null = null;

  /** @internal Use {@link registerInEtcd}. */
  constructor(
    target: EtcdTarget,
    address: string,
    opts: { tag: string; ttlSeconds: number; timeoutMs: number },
    logger: Logger,
  ) {
    this.#target = target;
    this.address = address;
    this.key = `${target.prefix}${address}`;
    this.#value = JSON.stringify({ address, tag: opts.tag });
    this.#ttl = opts.ttlSeconds;
    this.#timeoutMs = opts.timeoutMs;
    this.#logger = logger;
  }

  /** The lease id (a decimal int64), "0" before the first grant. */
  get lease(): string {
    return this.#lease;
  }

  /** @internal Grants the lease and puts the key, trying each endpoint once; then keeps alive. */
  async start(): Promise<void> {
    let last: unknown;
    for (let i = 0; i < this.#target.endpoints.length; i++) {
      try {
        await this.#register();
        this.#schedule();
        return;
      } catch (e) {
        last = e;
        this.#endpoint = (this.#endpoint + 1) % this.#target.endpoints.length;
      }
    }
    const why = last instanceof Error ? last.message : String(last);
    throw new VerbusError(
      last instanceof VerbusError ? last.code : "CONNECT_FAILED",
      `register ${this.address} in ${this.#target.url}: ${why}`,
      { cause: last },
    );
  }

  /** Grant a lease, then put the key under it. */
  async #register(): Promise<void> {
    const endpoint = this.#target.endpoints[this.#endpoint];
    const signal = this.#stopped.signal;
    const grant = await etcdPost(
      endpoint,
      "/v3/lease/grant",
      { TTL: String(this.#ttl) },
      this.#timeoutMs,
      signal,
    );
    const id = int64(grant.ID, "lease ID");
    if (id === 0n) throw new VerbusError("PROTOCOL", `etcd at ${endpoint} granted no lease`);
    this.#lease = id.toString();
    await etcdPost(
      endpoint,
      "/v3/kv/put",
      { key: b64(this.key), value: b64(this.#value), lease: this.#lease },
      this.#timeoutMs,
      signal,
    );
  }

  #schedule(): void {
    if (this.#stopped.signal.aborted) return;
    this.#timer = setTimeout(() => void this.#tick(), Math.max(200, (this.#ttl * 1000) / 3));
  }

  /** One keepalive; a lease that ended is replaced. Never throws. */
  async #tick(): Promise<void> {
    this.#timer = undefined;
    const endpoint = this.#target.endpoints[this.#endpoint];
    try {
      const answer = await etcdPost(
        endpoint,
        "/v3/lease/keepalive",
        { ID: this.#lease },
        this.#timeoutMs,
        this.#stopped.signal,
      );
      if (int64(obj(answer.result).TTL, "TTL") <= 0n) {
        // The lease ended (etcd was away longer than the TTL): the key went with it.
        await this.#register();
        this.#logger.warn(
          `register: lease of ${this.key} in ${this.#target.url} had ended; registered again`,
        );
      }
      if (this.#failing) {
        this.#failing = false;
        this.#logger.warn(`register: ${this.key} in ${this.#target.url} kept alive again`);
      }
    } catch (e) {
      if (this.#stopped.signal.aborted) return;
      this.#endpoint = (this.#endpoint + 1) % this.#target.endpoints.length;
      if (!this.#failing) {
        this.#failing = true;
        this.#logger.warn(
          `register: keepalive of ${this.key} failed: ${(e as Error).message}; retrying every ` +
            `${Math.round(this.#ttl / 3)} s (the key goes when the lease ends)`,
        );
      }
    }
    this.#schedule();
  }

  /**
   * Stops keeping alive and revokes the lease (the key goes now); a failed revoke is logged (the
   * key then goes when the lease ends). Never throws; safe twice.
   */
  stop(): Promise<void> {
    return this.#stopping ??= this.#stop();
  }

  async #stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#stopped.abort();
    if (this.#lease === "0") return;
    try {
      await etcdPost(
        this.#target.endpoints[this.#endpoint],
        "/v3/lease/revoke",
        { ID: this.#lease },
        this.#timeoutMs,
      );
    } catch (e) {
      this.#logger.warn(
        `register: revoking the lease of ${this.key} failed: ${(e as Error).message}; the key ` +
          `goes when the lease ends (${this.#ttl} s)`,
      );
    }
  }
}

/**
 * Registers the server listening on `host`:`port` as `option` says and keeps it registered
 * until the registration's stop(). Rejects (INVALID_OPTIONS, INVALID_ARGUMENT, CONNECT_FAILED,
 * TIMEOUT, PROTOCOL) naming the URL when it cannot register now.
 */
export async function registerInEtcd(
  option: RegisterOption,
  host: string,
  port: number,
  logger: Logger,
): Promise<EtcdRegistration> {
  const o = typeof option === "string"
    ? { url: option, ttlSeconds: 10, tag: "", timeoutMs: 5000, address: undefined }
    : option;
  const target = parseEtcdUrl(o.url);
  const address = o.address ?? advertisedAddress(host, port);
  if (parseServerLine(address)?.address !== address) {
    throw new VerbusError("INVALID_OPTIONS", `register: address "${address}": expected HOST:PORT`);
  }
  const reg = new EtcdRegistration(target, address, o, logger);
  await reg.start();
  return reg;
}
