/**
 * The RDMA verbs fabric as a session provider (see rpc/session/fabric_provider.ts), registered
 * as "verbs" when this module is imported.
 *
 * Server: listens with rdma_cm on `verbs.addr:verbs.port`; `offer()` builds the session's
 * endpoint (PD, CQs, RC QP, the region registered once) and offers the CM address and port, the
 * region address, rkey and sizes, and a nonce. The client connects with private data carrying
 * its own region and that nonce; the server accepts only a request naming a pending session
 * with the right nonce and the negotiated size. Each side then proves the other's rkey works
 * with one RDMA READ of its control page (magic, role and the nonce): the client before its
 * ACK, the server in `confirm()`.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { RegionLayout } from "../../rpc/region/layout.ts";
import type {
  ClientFabricProvider,
  OfferContext,
  ServerFabricProvider,
  ServerOffer,
} from "../../rpc/session/fabric_provider.ts";
import type { ClientHello } from "../../rpc/session/hello.ts";
import { type ProviderOptions, registerFabric } from "../../rpc/session/providers.ts";
import type { FabricEndpoint } from "../fabric.ts";
import { cmConnect, type CmConnection, CmEventLoop } from "./cm.ts";
import { CmListener, type CmRequest } from "./cm_listen.ts";
import { type CmLib, loadCm } from "./cm_lib.ts";
import { listDevices, openDevice } from "./device.ts";
import { DEFAULT_QP_TUNING } from "./qp.ts";
import {
  checkAccept,
  checkStamp,
  clientOptionsSchema,
  clientParamsSchema,
  decodeRequest,
  encodeAccept,
  encodeRequest,
  hex,
  offerSchema,
  parseOrHandshake,
  serverOptionsSchema,
  STAMP_BYTES,
  stampRegion,
  unhex,
  VERBS_WIRE_VERSION,
  type VerbsClientOptions,
  type VerbsServerOptions,
} from "./provider_wire.ts";
import { NoRdmaError } from "./verbs_lib.ts";
import { VerbsEndpoint } from "./verbs_endpoint.ts";
import { EndpointResources, type EndpointShape } from "./verbs_resources.ts";
import { REGION_VERSION } from "../../rpc/region/layout.ts";

/** Queue sizes and inline data every verbus session QP asks for (doctor reports the tuning). */
import { VERBS_QP_CAPS } from "./qp.ts"; // (defined with the QP tuning; doctor reports both)
export { VERBS_QP_CAPS };

/** The resource shape of a region of `regionSize` bytes whose sessions use `slotSize` slots. */
function shape(regionSize: number, slotSize: number, events: boolean): EndpointShape {
  const bounce = Math.min(8 << 20, Math.max(256 << 10, 32 * slotSize));
  return { regionSize, bounceSize: bounce, events, ...VERBS_QP_CAPS };
}

function short(e: unknown): string {
  return (e as Error).message.split("\n")[0];
}

/** Why verbs cannot run in this process, or null when it can (RDMA device + librdmacm present). */
async function whyNot(): Promise<{ lib: CmLib } | string> {
  let lib: CmLib;
  try {
    lib = await loadCm();
  } catch (e) {
    return `RDMA libraries unavailable: ${short(e)}`;
  }
  try {
    if (listDevices(lib).length === 0) return "no RDMA devices on this host";
  } catch (e) {
    return e instanceof NoRdmaError ? e.message : `cannot list RDMA devices: ${short(e)}`;
  }
  return { lib };
}

/** The IPv4 address of the first RDMA device (its IPv4-mapped GID), or null. */
function firstRdmaIPv4(lib: CmLib): string | null {
  for (const d of listDevices(lib)) {
    const ctx = openDevice(lib, d.name);
    try {
      const n = ctx.queryPort(1).gidTblLen;
      for (let i = 0; i < n; i++) {
        let g: Uint8Array;
        try {
          g = ctx.queryGid(1, i);
        } catch {
          continue;
        }
        if (g.subarray(0, 10).every((x) => x === 0) && g[10] === 0xff && g[11] === 0xff) {
          return Array.from(g.subarray(12)).join(".");
        }
      }
    } finally {
      ctx.close();
    }
  }
  return null;
}

function parseOptions<T>(
  schema: {
    safeParse(
      v: unknown,
    ): { success: true; data: T } | {
      success: false;
      error: { issues: { path: PropertyKey[]; message: string }[] };
    };
  },
  v: unknown,
  who: string,
): T {
  const r = schema.safeParse(v ?? {});
  if (r.success) return r.data;
  const i = r.error.issues[0];
  throw new VerbusError(
    "INVALID_OPTIONS",
    `${who} providerOptions.verbs.${i.path.map(String).join(".") || "(root)"}: ${i.message}`,
  );
}

interface Pending {
  ep: VerbsEndpoint;
  nonce: Uint8Array;
  clientSize: number;
  conn: CmConnection | null;
}

/** Server side of the verbs fabric: one rdma_cm listener, one endpoint per session. */
export class VerbsServerProvider implements ServerFabricProvider {
  readonly kind = "verbs" as const;
  readonly #pending = new Map<number, Pending>();

  private constructor(
    readonly lib: CmLib,
    readonly listener: CmListener,
    readonly o: VerbsServerOptions,
    private readonly log: (l: string) => void,
  ) {}

  /** Listens, or says why verbs cannot be served here. Throws INVALID_OPTIONS for bad options. */
  static async create(
    opts: ProviderOptions,
    log: (line: string) => void,
  ): Promise<VerbsServerProvider | string> {
    const o = parseOptions(serverOptionsSchema, opts.verbs, "serve()");
    const r = await whyNot();
    if (typeof r === "string") return r;
    const { lib } = r;
    const addr = o.addr ?? firstRdmaIPv4(lib);
    if (!addr) return "no RDMA device has an IPv4 address: give providerOptions.verbs.addr";
    const tcpPort = typeof opts.tcpPort === "number" ? opts.tcpPort : 0;
    const port = o.port ?? (tcpPort > 0 && tcpPort < 65535 ? tcpPort + 1 : 0);
    let listener: CmListener;
    const provider: { p: VerbsServerProvider | null } = { p: null };
    try {
      listener = new CmListener(
        CmEventLoop.get(lib),
        addr,
        port,
        o.backlog,
        (req) => provider.p!.#request(req),
      );
    } catch (e) {
      return `cannot listen for RDMA connections on ${addr}:${port}: ${short(e)}`;
    }
    provider.p = new VerbsServerProvider(lib, listener, { ...o, addr }, log);
    log(`verbs: listening on ${addr}:${listener.port} (${listener.device}, ${o.mode} mode)`);
    return provider.p;
  }

  refuse(hello: ClientHello): string | undefined {
    const r = clientParamsSchema.safeParse(hello.params.verbs);
    if (!r.success) {
      return `client verbs params: field ${r.error.issues[0].path.join(".") || "(root)"}: ${
        r.error.issues[0].message
      }`;
    }
    return undefined;
  }

  async offer(ctx: OfferContext): Promise<ServerOffer> {
    const events = this.o.mode === "event";
    const res = EndpointResources.open(
      this.lib,
      this.listener.device,
      shape(
        ctx.server.size,
        Math.max(ctx.server.config.slotSize, ctx.client.config.slotSize),
        events,
      ),
    );
    const nonce = crypto.getRandomValues(new Uint8Array(16));
    stampRegion(res.local, 1, nonce);
    const ep = new VerbsEndpoint(
      this.lib,
      res,
      ctx.client.size,
      `${ctx.peerHost} (verbs session ${ctx.sessionId})`,
      this.o.signalEvery,
    );
    const p: Pending = { ep, nonce, clientSize: ctx.client.size, conn: null };
    this.#pending.set(ctx.sessionId, p);
    ep.onClose = () => {
      if (this.#pending.get(ctx.sessionId) === p) this.#pending.delete(ctx.sessionId);
    };
    const offer = {
      version: VERBS_WIRE_VERSION,
      addr: this.o.addr!,
      port: this.listener.port,
      device: this.listener.device,
      session: ctx.sessionId,
      region: {
        addr: `0x${res.region.addr.toString(16)}`,
        rkey: res.region.rkey,
        size: ctx.server.size,
      },
      layoutVersion: REGION_VERSION,
      sizes: { server: ctx.server.size, client: ctx.client.size },
      nonce: hex(nonce),
      mode: this.o.mode,
    };
    return { endpoint: ep, offer, confirm: () => this.#confirm(ctx.sessionId, p) };
  }

  #request(req: CmRequest): void {
    const r = decodeRequest(req.data);
    if (typeof r === "string") return req.reject(r);
    const p = this.#pending.get(r.session);
    if (!p) return req.reject(`no pending verbs session ${r.session}`);
    if (p.conn) return req.reject(`verbs session ${r.session} is already connected`);
    if (hex(r.nonce) !== hex(p.nonce)) {
      return req.reject(`wrong nonce for verbs session ${r.session}`);
    }
    if (r.size !== p.clientSize) {
      return req.reject(`client region of ${r.size} bytes, negotiated ${p.clientSize}`);
    }
    try {
      req.accept(p.ep.resources.qp, encodeAccept(p.nonce), DEFAULT_QP_TUNING);
    } catch (e) {
      p.ep.fail(`accept failed: ${short(e)}`);
      return req.reject(`server could not accept: ${short(e)}`);
    }
    p.conn = req.conn;
    p.ep.attach({ addr: r.addr, rkey: r.rkey, peerEvents: r.events }, req.conn);
  }

  async #confirm(session: number, p: Pending): Promise<boolean> {
    const end = performance.now() + this.o.acceptTimeoutMs;
    while (!p.conn && performance.now() < end && !p.ep.failed) {
      await new Promise((r) => setTimeout(r, 2));
    }
    if (this.#pending.get(session) === p) this.#pending.delete(session);
    if (!p.conn || !(await p.conn.whenEstablished(Math.max(1, end - performance.now())))) {
      this.log(
        `verbs session ${session}: no RDMA connection (${
          p.conn?.reason || p.ep.failureReason || "the client never connected"
        })`,
      );
      return false;
    }
    try {
      const why = checkStamp(await p.ep.probe(0, STAMP_BYTES), 2, p.nonce);
      if (why) this.log(`verbs session ${session}: ${why}`);
      return why === undefined;
    } catch (e) {
      this.log(`verbs session ${session}: ${short(e)}`);
      return false;
    }
  }

  close(): void {
    this.listener.close();
  }
}

/** Client side of the verbs fabric. */
export class VerbsClientProvider implements ClientFabricProvider {
  readonly kind = "verbs" as const;
  readonly label = "verbs";

  private constructor(readonly lib: CmLib, readonly o: VerbsClientOptions) {}

  /** The provider, or why verbs cannot be used here. Throws INVALID_OPTIONS for bad options. */
  static async create(opts: ProviderOptions): Promise<VerbsClientProvider | string> {
    const o = parseOptions(clientOptionsSchema, opts.verbs, "connect()");
    const r = await whyNot();
    return typeof r === "string" ? r : new VerbsClientProvider(r.lib, o);
  }

  params(): unknown {
    return { mode: this.o.mode, ...(this.o.sourceAddr ? { sourceAddr: this.o.sourceAddr } : {}) };
  }

  async open(
    offerJson: unknown,
    server: RegionLayout,
    client: RegionLayout,
  ): Promise<FabricEndpoint> {
    const offer = parseOrHandshake(offerSchema, offerJson, "verbs offer");
    if (offer.layoutVersion !== REGION_VERSION) {
      throw new VerbusError(
        "HANDSHAKE",
        `verbs offer: region layout version ${offer.layoutVersion}, this client speaks ${REGION_VERSION}`,
      );
    }
    if (
      offer.sizes.server !== server.size || offer.sizes.client !== client.size ||
      offer.region.size !== server.size
    ) {
      throw new VerbusError(
        "HANDSHAKE",
        `verbs offer: region sizes ${offer.sizes.server}/${offer.sizes.client} disagree with the negotiated layout ${server.size}/${client.size}`,
      );
    }
    const nonce = unhex(offer.nonce), events = this.o.mode === "event";
    const peer = `${offer.addr}:${offer.port}`;
    let res: EndpointResources | null = null, ep: VerbsEndpoint | null = null;
    try {
      const conn = await cmConnect(CmEventLoop.get(this.lib), {
        dst: offer.addr,
        port: offer.port,
        src: this.o.sourceAddr,
        timeoutMs: this.o.connectTimeoutMs,
        tuning: DEFAULT_QP_TUNING,
        onDevice: (device) => {
          res = EndpointResources.open(
            this.lib,
            device,
            shape(client.size, Math.max(server.config.slotSize, client.config.slotSize), events),
          );
          stampRegion(res.local, 2, nonce);
          ep = new VerbsEndpoint(this.lib, res, server.size, peer, this.o.signalEvery);
          return res.qp;
        },
        privateData: () =>
          encodeRequest({
            session: offer.session,
            events,
            rkey: res!.region.rkey,
            addr: res!.region.address,
            size: client.size,
            nonce,
          }),
        checkResponse: (data) => checkAccept(data, nonce),
      });
      const e = ep as VerbsEndpoint | null;
      if (!e) throw new VerbusError("HANDSHAKE", "connected without an endpoint");
      e.attach({
        addr: Number(BigInt(offer.region.addr)),
        rkey: offer.region.rkey,
        peerEvents: offer.mode === "event",
      }, conn);
      const why = checkStamp(await e.probe(0, STAMP_BYTES), 1, nonce);
      if (why) throw new VerbusError("HANDSHAKE", `verbs server ${peer}: ${why}`);
      return e;
    } catch (err) {
      const e = ep as VerbsEndpoint | null, r = res as EndpointResources | null;
      if (e) e.close();
      else r?.close();
      throw err instanceof VerbusError && err.code === "HANDSHAKE"
        ? err
        : new VerbusError("HANDSHAKE", `verbs connect to ${peer}: ${short(err)}`, { cause: err });
    }
  }

  close(): void {}
}

registerFabric(
  "verbs",
  (opts, log) => VerbsServerProvider.create(opts, log),
  (opts) => VerbsClientProvider.create(opts),
);
