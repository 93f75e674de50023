/**
 * The RDMA verbs fabric as a session provider (transport/provider.ts; loaded by
 * transport/registry.ts as "verbs").
 *
 * Server: listens with rdma_cm on `addr:port`; `offer()` prepares the session's endpoint (PD,
 * CQs, RC QP, the region registered once and stamped with the session nonce) and offers the CM
 * address and port, the region address, rkey and sizes, and the nonce. The client connects with
 * private data carrying its own region and that nonce; the server accepts only a request naming
 * a pending session with the right nonce and the negotiated size. Each side then proves the
 * other's rkey works with one RDMA READ of its fabric header (transport/proof.ts): the client in
 * `open()`, before its ACK; the server in `offer.connect()`, on the ACK.
 * Control path; one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { bytesEqual } from "../../util/hex.ts";
import { checkOptions, parseOptions } from "../../util/options.ts";
import { REGION_VERSION, ROLE_CLIENT, ROLE_SERVER } from "../control_page.ts";
import type { FabricEndpoint } from "../fabric.ts";
import { newNonce, nonceFromHex, nonceToHex } from "../proof.ts";
import type {
  ClientFabricProvider,
  OfferContext,
  PeerInfo,
  ServerFabricProvider,
  ServerOffer,
  SessionSizes,
} from "../provider.ts";
import { CmEventLoop } from "./cm_events.ts";
import { cmResolveRoute, type ResolvedRoute } from "./cm_connect.ts";
import { CmListener, type CmRequest } from "./cm_listen.ts";
import { type CmLib, loadCm } from "./cm_lib.ts";
import { listDevices, openDevice } from "./device.ts";
import { PreparedVerbsEndpoint } from "./handshake.ts";
import {
  autoLogBytes,
  checkAccept,
  decodeRequest,
  encodeRequest,
  VERBS_WIRE_VERSION,
  type VerbsClientOptions,
  verbsClientOptionsSchema,
  verbsClientParamsSchema,
  verbsOfferSchema,
  type VerbsServerOptions,
  verbsServerOptionsSchema,
} from "./provider_wire.ts";
import { DEFAULT_QP_TUNING, VERBS_QP_CAPS } from "./qp.ts";
import { VerbsServerOffer } from "./server_offer.ts";
import { NoRdmaError } from "./verbs_lib.ts";
import type { EndpointShape } from "./verbs_resources.ts";

export { VERBS_QP_CAPS };

/** The resource shape of a region of `regionSize` bytes whose messages reach `maxMessage` bytes. */
function shape(
  regionSize: number,
  maxMessage: number,
  events: boolean,
  logBytes: number,
): EndpointShape {
  const bounce = Math.min(8 << 20, Math.max(256 << 10, 32 * maxMessage));
  // VERBS_QP_CAPS carries rqDepth and signaledBudget: the session's share of the shared CQ.
  return { regionSize, bounceSize: bounce, logBytes, events, ...VERBS_QP_CAPS };
}

function firstLine(e: unknown): string {
  return (e as Error).message.split("\n")[0];
}

/** The loaded libraries, or why verbs cannot run in this process (no device, no librdmacm). */
async function loadUsable(): Promise<CmLib | string> {
  let lib: CmLib;
  try {
    lib = await loadCm();
  } catch (e) {
    return `RDMA libraries unavailable: ${firstLine(e)}`;
  }
  try {
    if (listDevices(lib).length === 0) return "no RDMA devices on this host";
  } catch (e) {
    return e instanceof NoRdmaError ? e.message : `cannot list RDMA devices: ${firstLine(e)}`;
  }
  return lib;
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

/** Server side of the verbs fabric: one rdma_cm listener, one prepared endpoint per offer. */
export class VerbsServerProvider implements ServerFabricProvider {
  readonly kind = "verbs" as const;
  readonly #pending = new Map<number, VerbsServerOffer>();
  #listener: CmListener | null = null;

  private constructor(
    readonly lib: CmLib,
    readonly options: VerbsServerOptions & { addr: string },
  ) {}

  /**
   * Listens, or says why verbs cannot be served here. Throws INVALID_OPTIONS for bad options
   * (`options` is the server's `providerOptions.verbs`).
   */
  static async create(
    options: unknown,
    log: (line: string) => void,
  ): Promise<VerbsServerProvider | string> {
    const o = parseOptions(
      verbsServerOptionsSchema,
      options ?? {},
      "serve() providerOptions.verbs",
    );
    const lib = await loadUsable();
    if (typeof lib === "string") return lib;
    const addr = o.addr ?? firstRdmaIPv4(lib);
    if (!addr) return "no RDMA device has an IPv4 address: give providerOptions.verbs.addr";
    const provider = new VerbsServerProvider(lib, { ...o, addr });
    try {
      provider.#listener = new CmListener(
        CmEventLoop.get(lib),
        addr,
        o.port,
        o.backlog,
        (req) => provider.#request(req),
      );
    } catch (e) {
      return `cannot listen for RDMA connections on ${addr}:${o.port}: ${firstLine(e)}`;
    }
    const l = provider.#listener;
    log(`verbs: listening on ${addr}:${l.port} (${l.device}, ${o.mode} mode)`);
    return provider;
  }

  /** The listener (open until close()). */
  get listener(): CmListener {
    if (!this.#listener) throw new VerbusError("FABRIC", "the verbs provider is closed");
    return this.#listener;
  }

  refuse(_peer: PeerInfo, params: unknown): string | undefined {
    const r = checkOptions(verbsClientParamsSchema, params, "client verbs params");
    return r.ok ? undefined : r.why;
  }

  offer(ctx: OfferContext): Promise<ServerOffer> {
    const { sizes } = ctx, listener = this.listener;
    const nonce = newNonce();
    const logBytes = this.options.logBytes ?? autoLogBytes(sizes);
    const prepared = PreparedVerbsEndpoint.prepare(
      this.lib,
      listener.device,
      shape(sizes.server, sizes.maxMessage, this.options.mode === "event", logBytes),
      ROLE_SERVER,
      nonce,
      this.options.signalEvery,
      this.options.preparedQps,
    );
    const region = prepared.region;
    const offer = {
      version: VERBS_WIRE_VERSION,
      addr: this.options.addr,
      port: listener.port,
      device: listener.device,
      session: ctx.sessionId,
      region: { addr: `0x${region.address.toString(16)}`, rkey: region.rkey, size: sizes.server },
      layoutVersion: REGION_VERSION,
      sizes: { server: sizes.server, client: sizes.client },
      nonce: nonceToHex(nonce),
      mode: this.options.mode,
      logBytes,
    };
    const pending = new VerbsServerOffer(
      ctx.sessionId,
      offer,
      prepared,
      sizes.client,
      `${ctx.peer.host} (verbs session ${ctx.sessionId})`,
      this.options.acceptTimeoutMs,
      () => {
        if (this.#pending.get(ctx.sessionId) === pending) this.#pending.delete(ctx.sessionId);
      },
    );
    this.#pending.get(ctx.sessionId)?.abort("replaced by a new offer");
    this.#pending.set(ctx.sessionId, pending);
    return Promise.resolve(pending);
  }

  /** Offers waiting for their client (tests). */
  get pendingOffers(): number {
    return this.#pending.size;
  }

  #request(req: CmRequest): void {
    const r = decodeRequest(req.data);
    if (typeof r === "string") return req.reject(r);
    const pending = this.#pending.get(r.session);
    if (!pending) return req.reject(`no pending verbs session ${r.session}`);
    if (!bytesEqual(r.nonce, pending.nonce)) {
      return req.reject(`wrong nonce for verbs session ${r.session}`);
    }
    pending.take(req, r);
  }

  close(): void {
    for (const p of [...this.#pending.values()]) p.abort("the verbs provider closed");
    this.#listener?.close();
    this.#listener = null;
  }
}

/** Client side of the verbs fabric. */
export class VerbsClientProvider implements ClientFabricProvider {
  readonly kind = "verbs" as const;
  readonly label = "verbs";

  private constructor(readonly lib: CmLib, readonly options: VerbsClientOptions) {}

  /**
   * The provider, or why verbs cannot be used here. Throws INVALID_OPTIONS for bad options
   * (`options` is the client's `providerOptions.verbs`).
   */
  static async create(options: unknown): Promise<VerbsClientProvider | string> {
    const o = parseOptions(
      verbsClientOptionsSchema,
      options ?? {},
      "connect() providerOptions.verbs",
    );
    const lib = await loadUsable();
    return typeof lib === "string" ? lib : new VerbsClientProvider(lib, o);
  }

  params(): unknown {
    const o = this.options;
    return { mode: o.mode, ...(o.sourceAddr ? { sourceAddr: o.sourceAddr } : {}) };
  }

  async open(offerJson: unknown, sizes: SessionSizes): Promise<FabricEndpoint> {
    const offer = parseOptions(verbsOfferSchema, offerJson, "verbs offer", "HANDSHAKE");
    if (offer.layoutVersion !== REGION_VERSION) {
      throw new VerbusError(
        "HANDSHAKE",
        `verbs offer: region layout version ${offer.layoutVersion}, this client speaks ${REGION_VERSION}`,
      );
    }
    if (
      offer.sizes.server !== sizes.server || offer.sizes.client !== sizes.client ||
      offer.region.size !== sizes.server
    ) {
      throw new VerbusError(
        "HANDSHAKE",
        `verbs offer: region sizes ${offer.sizes.server}/${offer.sizes.client} disagree with the negotiated sizes ${sizes.server}/${sizes.client}`,
      );
    }
    const nonce = nonceFromHex(offer.nonce), events = this.options.mode === "event";
    const peer = `${offer.addr}:${offer.port}`;
    let route: ResolvedRoute | null = null, prepared: PreparedVerbsEndpoint | null = null;
    let serverToken = -1;
    try {
      route = await cmResolveRoute(CmEventLoop.get(this.lib), {
        dst: offer.addr,
        port: offer.port,
        src: this.options.sourceAddr,
        timeoutMs: this.options.connectTimeoutMs,
      });
      prepared = PreparedVerbsEndpoint.prepare(
        this.lib,
        route.device,
        shape(sizes.client, sizes.maxMessage, events, offer.logBytes),
        ROLE_CLIENT,
        nonce,
        this.options.signalEvery,
        this.options.preparedQps,
      );
      const region = prepared.region;
      const conn = await route.connect({
        qp: prepared.qp,
        privateData: encodeRequest({
          session: offer.session,
          events,
          rkey: region.rkey,
          addr: region.address,
          size: sizes.client,
          nonce,
          token: prepared.token,
        }),
        tuning: DEFAULT_QP_TUNING,
        checkResponse: (data) => {
          const r = checkAccept(data, nonce);
          if (typeof r === "string") return r;
          serverToken = r;
        },
      });
      const ready = prepared;
      prepared = null; // connect() owns (and on failure releases) everything from here
      route = null;
      return await ready.connect({
        addr: Number(BigInt(offer.region.addr)),
        rkey: offer.region.rkey,
        size: sizes.server,
        events: offer.mode === "event",
        token: serverToken,
        role: ROLE_SERVER,
        name: peer,
      }, conn);
    } catch (err) {
      prepared?.close();
      route?.close();
      throw err instanceof VerbusError && err.code === "HANDSHAKE"
        ? err
        : new VerbusError("HANDSHAKE", `verbs connect to ${peer}: ${firstLine(err)}`, {
          cause: err,
        });
    }
  }

  close(): void {}
}

/** The server provider of this fabric (transport/provider.ts `FabricModule`). */
export function createServerProvider(
  options: unknown,
  log: (line: string) => void,
): Promise<ServerFabricProvider | string> {
  return VerbsServerProvider.create(options, log);
}

/** The client provider of this fabric (transport/provider.ts `FabricModule`). */
export function createClientProvider(options: unknown): Promise<ClientFabricProvider | string> {
  return VerbsClientProvider.create(options);
}
