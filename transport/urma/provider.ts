/**
 * The URMA fabric as a provider (rpc/session/fabric_provider.ts). Importing this module
 * registers it (rpc/session/providers.ts imports it on demand).
 *
 * liburma comes only from {@link loadUrma}: `providerOptions.urma.library`, else
 * `VERBUS_LIBURMA`, else the system sonames — the simulator is never picked up by accident, and
 * reports say "urma (simulated)" when it is in use. Without liburma the factories return the
 * loader's reason ("no liburma found: tried ..."), which the handshake logs as the OFF reason.
 *
 * Handshake: the client's hello carries its jetty (EID, uasid, id), token and mode; the server
 * opens its side, registers its region and answers with its jetty, its region segment
 * (`urma_seg_t` as hex), token, sizes and a nonce. The client imports the server's segment then
 * jetty, registers its region and SENDs the proof (nonce + its segment); on the ACK the server
 * checks the proof and imports the client's segment then jetty. Every peer field is validated
 * (zod, then sizes / EIDs against the negotiated layouts).
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import type { RegionLayout } from "../../rpc/region/layout.ts";
import type {
  ClientFabricProvider,
  OfferContext,
  ServerFabricProvider,
  ServerOffer,
} from "../../rpc/session/fabric_provider.ts";
import { bootId, type ClientHello } from "../../rpc/session/hello.ts";
import { type ProviderOptions, registerFabric } from "../../rpc/session/providers.ts";
import type { FabricEndpoint } from "../fabric.ts";
import { listUrmaDevices } from "./context.ts";
import { FABRIC_PAGE } from "./endpoint.ts";
import {
  acceptProof,
  bounceBytesFor,
  checkSegment,
  connectPeer,
  fromHex,
  sendProof,
  toHex,
  UrmaPort,
} from "./setup.ts";
import { loadUrma, type UrmaLib } from "./urma_lib.ts";

/** `providerOptions.urma`. */
export const urmaProviderOptionsSchema = z.object({
  /** Path of liburma (e.g. the simulator build/urma_sim/liburma.so.0). */
  library: z.string().min(1).optional(),
  /** URMA device name (default: the first). */
  device: z.string().min(1).max(64).optional(),
  /** EID index on the device. */
  eidIndex: z.number().int().min(0).max(1023).optional(),
  /** Jetty transport mode. */
  mode: z.enum(["RM", "RC"]).default("RM"),
}).strict();
/** Validated URMA provider options. */
export type UrmaProviderOptions = z.output<typeof urmaProviderOptionsSchema>;

const u32 = z.number().int().min(0).max(0xffff_ffff);
const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`));
const jettySchema = z.object({ eid: hex(32), uasid: u32, id: u32 }).strict();

/** What the client sends in its hello under `params.urma`. */
export const urmaParamsSchema = z.object({
  v: z.literal(1),
  jetty: jettySchema,
  token: u32,
  mode: z.enum(["RM", "RC"]),
  simulated: z.boolean(),
}).strict();

/** What the server answers as the offer. */
export const urmaOfferSchema = z.object({
  v: z.literal(1),
  jetty: jettySchema,
  token: u32,
  mode: z.enum(["RM", "RC"]),
  /** The server's region segment: urma_seg_t, 48 bytes as hex. */
  seg: hex(96),
  serverSize: z.number().int().positive(),
  clientSize: z.number().int().positive(),
  fabricPage: z.literal(FABRIC_PAGE),
  nonce: hex(32),
}).strict();

/** How long the server waits for the proof after the ACK. */
const PROOF_WAIT_MS = 3000;

const firstLine = (e: unknown) =>
  String((e as Error)?.message ?? e).replace(/\s*\n\s*/g, " ").trim();

function parseOpts(opts: ProviderOptions): UrmaProviderOptions | string {
  const r = urmaProviderOptionsSchema.safeParse(opts.urma ?? {});
  if (r.success) return r.data;
  const i = r.error.issues[0];
  return `invalid providerOptions.urma.${i.path.join(".") || "(root)"}: ${i.message}`;
}

function issue(what: string, r: { error: z.ZodError }): VerbusError {
  const i = r.error.issues[0];
  return new VerbusError(
    "HANDSHAKE",
    `${what}: field ${i.path.join(".") || "(root)"}: ${i.message}`,
  );
}

/** Loads liburma as chosen; a usable library with a device, or why not. */
async function open(o: UrmaProviderOptions): Promise<UrmaLib | string> {
  let u: UrmaLib;
  try {
    u = await loadUrma(o.library);
  } catch (e) {
    return firstLine(e);
  }
  try {
    const devs = listUrmaDevices(u);
    if (devs.length === 0) return `liburma at ${u.path} sees no URMA device`;
    if (o.device && !devs.includes(o.device)) {
      return `no URMA device ${o.device} (have ${devs.join(", ")})`;
    }
  } catch (e) {
    return firstLine(e);
  }
  return u;
}

/** Server side of the URMA fabric. */
export class UrmaServerProvider implements ServerFabricProvider {
  readonly kind = "urma" as const;
  private constructor(private readonly u: UrmaLib, private readonly o: UrmaProviderOptions) {}

  /** The provider, or why URMA cannot be offered (never throws). */
  static async create(
    opts: ProviderOptions,
    log: (line: string) => void,
  ): Promise<UrmaServerProvider | string> {
    const o = parseOpts(opts);
    if (typeof o === "string") return o;
    const u = await open(o);
    if (typeof u === "string") return u;
    log(
      `urma: ${
        u.simulated ? "SIMULATED liburma" : "liburma"
      } ${u.path} (${u.version}), mode ${o.mode}`,
    );
    return new UrmaServerProvider(u, o);
  }

  refuse(hello: ClientHello): string | undefined {
    const r = urmaParamsSchema.safeParse(hello.params.urma);
    if (!r.success) return issue("client urma parameters", r).message;
    const p = r.data;
    if (p.simulated !== this.u.simulated) {
      return `the server runs ${
        this.u.simulated ? "the simulated" : "a real"
      } liburma, the client ${p.simulated ? "the simulated" : "a real"} one`;
    }
    if (this.u.simulated && hello.bootId !== bootId()) {
      return "the simulated liburma connects processes of one host only (boot ids differ)";
    }
    if (p.mode !== this.o.mode) {
      return `jetty mode ${p.mode} requested, the server runs ${this.o.mode}`;
    }
    return undefined;
  }

  async offer(ctx: OfferContext): Promise<ServerOffer> {
    const r = urmaParamsSchema.safeParse(ctx.params);
    if (!r.success) throw issue("client urma parameters", r);
    const p = r.data;
    const port = UrmaPort.open(this.u, {
      device: this.o.device,
      eidIndex: this.o.eidIndex,
      mode: this.o.mode,
    });
    const ep = port.endpoint(
      ctx.server.size,
      ctx.client.size,
      bounceBytesFor(ctx.server.config.slotSize),
    );
    const nonce = crypto.getRandomValues(new Uint8Array(16));
    const offer: z.input<typeof urmaOfferSchema> = {
      v: 1,
      jetty: port.address,
      token: port.token,
      mode: this.o.mode,
      seg: toHex(ep.parts.regionSeg.descriptor),
      serverSize: ctx.server.size,
      clientSize: ctx.client.size,
      fabricPage: FABRIC_PAGE,
      nonce: toHex(nonce),
    };
    return {
      endpoint: ep,
      offer,
      confirm: async () => {
        const res = await acceptProof(ep, {
          nonce,
          jetty: p.jetty,
          token: p.token,
          mode: p.mode,
          clientSize: ctx.client.size,
        }, PROOF_WAIT_MS);
        if (!res.ok) ep.fail(`urma proof: ${res.why}`);
        return res.ok;
      },
    };
  }

  close(): void {}
}

/** Client side of the URMA fabric. Its port (context, jetty) exists from creation to open(). */
export class UrmaClientProvider implements ClientFabricProvider {
  readonly kind = "urma" as const;
  readonly label: string;
  #port: UrmaPort | null;

  private constructor(private readonly u: UrmaLib, port: UrmaPort) {
    this.#port = port;
    this.label = u.simulated ? "urma (simulated)" : "urma";
  }

  /** The provider (with its jetty open, for the hello), or why URMA cannot be used. */
  static async create(opts: ProviderOptions): Promise<UrmaClientProvider | string> {
    const o = parseOpts(opts);
    if (typeof o === "string") return o;
    const u = await open(o);
    if (typeof u === "string") return u;
    try {
      return new UrmaClientProvider(
        u,
        UrmaPort.open(u, { device: o.device, eidIndex: o.eidIndex, mode: o.mode }),
      );
    } catch (e) {
      return `cannot open URMA: ${firstLine(e)}`;
    }
  }

  params(): unknown {
    const port = this.#port;
    if (!port) return {};
    return {
      v: 1,
      jetty: port.address,
      token: port.token,
      mode: port.mode,
      simulated: this.u.simulated,
    };
  }

  async open(offer: unknown, server: RegionLayout, client: RegionLayout): Promise<FabricEndpoint> {
    const port = this.#port;
    if (!port) throw new VerbusError("HANDSHAKE", "urma provider already used or closed");
    const r = urmaOfferSchema.safeParse(offer);
    if (!r.success) throw issue("urma offer", r);
    const o = r.data;
    if (o.serverSize !== server.size || o.clientSize !== client.size) {
      throw new VerbusError(
        "HANDSHAKE",
        `urma offer sizes (${o.serverSize}/${o.clientSize}) disagree with the negotiated layout (${server.size}/${client.size})`,
      );
    }
    if (o.mode !== port.mode) {
      throw new VerbusError(
        "HANDSHAKE",
        `urma offer mode ${o.mode}, this client runs ${port.mode}`,
      );
    }
    const desc = fromHex(o.seg);
    checkSegment(desc, server.size + FABRIC_PAGE, fromHex(o.jetty.eid), "server");
    this.#port = null;
    const ep = port.endpoint(client.size, server.size, bounceBytesFor(client.config.slotSize));
    try {
      connectPeer(ep, desc, o.jetty, o.token, o.mode);
      sendProof(ep, fromHex(o.nonce));
    } catch (e) {
      ep.close();
      throw e;
    }
    return ep;
  }

  close(): void {
    this.#port?.close();
    this.#port = null;
  }
}

registerFabric(
  "urma",
  (opts, log) => UrmaServerProvider.create(opts, log),
  (opts) => UrmaClientProvider.create(opts),
);
