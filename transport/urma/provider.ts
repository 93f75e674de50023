/**
 * The URMA fabric as a provider (transport/provider.ts): `createServerProvider(options, log)`
 * and `createClientProvider(options)`, where `options` is the URMA part of the provider options
 * ({@link urmaProviderOptionsSchema}).
 *
 * liburma comes only from {@link loadUrma}: `options.library`, else `VERBUS_LIBURMA`, else the
 * system sonames — the simulator is never picked up by accident, and reports say
 * "urma (simulated)" when it is in use. Without liburma the factories return the loader's
 * reason ("no liburma found: tried ..."), which the handshake logs as the OFF reason.
 *
 * Handshake (handshake.ts does the work): the client's hello carries its jetty (EID, uasid,
 * id), token, mode and readiness token (`notify`: the immediate the server's kicks carry; the
 * offer carries the server's the same way). The server prepares its side (region registered
 * and stamped) and offers its jetty, its region segment (`urma_seg_t` as hex), token, sizes and
 * the session nonce. The
 * client imports the server, checks the server's stamp through a READ, sends its own segment
 * and yields its endpoint; on the ACK the server imports the client and checks its stamp the
 * same way. Every peer field is validated (zod, then sizes / EIDs against the negotiated sizes).
 * Control path; one JS thread.
 * @module
 */
import { hostBootId } from "../host.ts";
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { fromHex, toHex } from "../../util/hex.ts";
import { checkOptions, parseOptions } from "../../util/options.ts";
import { ROLE_CLIENT, ROLE_SERVER } from "../control_page.ts";
import type { FabricEndpoint } from "../fabric.ts";
import { newNonce, NONCE_HEX, nonceFromHex } from "../proof.ts";
import type {
  ClientFabricProvider,
  OfferContext,
  PeerInfo,
  ProviderOptions,
  ServerFabricProvider,
  ServerOffer,
  SessionSizes,
} from "../provider.ts";
import { listUrmaDevices } from "./context.ts";
import { DESCRIPTION_MAX } from "./description.ts";
import { FABRIC_PAGE } from "./endpoint_config.ts";
import { bounceBytesFor, PreparedUrmaSide } from "./handshake.ts";
import { UrmaPort } from "./port.ts";
import { loadUrma, type UrmaLib } from "./urma_lib.ts";

/** The URMA part of the provider options. */
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
const hex = (digits: number) => z.string().regex(new RegExp(`^[0-9a-f]{${digits}}$`));
const jettySchema = z.object({ eid: hex(32), uasid: u32, id: u32 }).strict();
/** A description (transport/urma/description.ts): 6 – DESCRIPTION_MAX bytes as hex. */
const descriptionHex = z.string().regex(/^(?:[0-9a-f]{2})+$/).min(12).max(2 * DESCRIPTION_MAX);

/** What the client sends in its hello for URMA. */
export const urmaParamsSchema = z.object({
  v: z.literal(3),
  jetty: jettySchema,
  token: u32,
  /** The client side's readiness token (the immediate of the server's kicks). */
  notify: u32,
  mode: z.enum(["RM", "RC"]),
  simulated: z.boolean(),
  /** The client jetty's description (the library's urma_get_rjetty blob, or the fixed form). */
  rjetty: descriptionHex.optional(),
}).strict();

/** What the server answers as the offer. */
export const urmaOfferSchema = z.object({
  v: z.literal(3),
  jetty: jettySchema,
  token: u32,
  /** The server side's readiness token (the immediate of the client's kicks). */
  notify: u32,
  mode: z.enum(["RM", "RC"]),
  /** The server's region segment: urma_seg_t, the 48-byte fixed form as hex. */
  seg: hex(96),
  /** Its description (the library's urma_get_seg_ctx blob where there is one). */
  segDesc: descriptionHex.optional(),
  /** The server jetty's description. */
  rjetty: descriptionHex.optional(),
  serverSize: z.number().int().positive(),
  clientSize: z.number().int().positive(),
  fabricPage: z.literal(FABRIC_PAGE),
  /** The session nonce (transport/proof.ts). */
  nonce: z.string().regex(NONCE_HEX),
}).strict();

/** How long either side waits for a handshake step (the peer's SEND, a READ's completion). */
const HANDSHAKE_WAIT_MS = 3000;

const firstLine = (e: unknown) =>
  String((e as Error)?.message ?? e).replace(/\s*\n\s*/g, " ").trim();

/** Validates the options and loads liburma with a device: the library, or why not. */
async function openLibrary(options: ProviderOptions): Promise<
  { lib: UrmaLib; options: UrmaProviderOptions } | string
> {
  const checked = checkOptions(urmaProviderOptionsSchema, options ?? {}, "providerOptions.urma");
  if (!checked.ok) return checked.why;
  const o = checked.value;
  let lib: UrmaLib;
  try {
    lib = await loadUrma(o.library);
  } catch (e) {
    return firstLine(e);
  }
  try {
    const devices = listUrmaDevices(lib);
    if (devices.length === 0) return `liburma at ${lib.path} sees no URMA device`;
    if (o.device && !devices.includes(o.device)) {
      return `no URMA device ${o.device} (have ${devices.join(", ")})`;
    }
  } catch (e) {
    return firstLine(e);
  }
  return { lib, options: o };
}

/** Server side of the URMA fabric. */
class UrmaServerProvider implements ServerFabricProvider {
  readonly kind = "urma" as const;

  constructor(private readonly lib: UrmaLib, private readonly options: UrmaProviderOptions) {}

  refuse(peer: PeerInfo, params: unknown): string | undefined {
    const checked = checkOptions(urmaParamsSchema, params, "client urma parameters");
    if (!checked.ok) return checked.why;
    const client = checked.value, simulated = this.lib.simulated;
    if (client.simulated !== simulated) {
      return `the server runs ${simulated ? "the simulated" : "a real"} liburma, the client ${
        client.simulated ? "the simulated" : "a real"
      } one`;
    }
    if (simulated && peer.bootId !== hostBootId()) {
      return "the simulated liburma connects processes of one host only (boot ids differ)";
    }
    if (client.mode !== this.options.mode) {
      return `jetty mode ${client.mode} requested, the server runs ${this.options.mode}`;
    }
    return undefined;
  }

  // deno-lint-ignore require-await
  async offer(ctx: OfferContext): Promise<ServerOffer> {
    const client = parseOptions(
      urmaParamsSchema,
      ctx.params,
      "client urma parameters",
      "HANDSHAKE",
    );
    if (client.mode !== this.options.mode) {
      throw new VerbusError("HANDSHAKE", `urma: the client asks for mode ${client.mode}`);
    }
    const { device, eidIndex, mode } = this.options;
    const port = UrmaPort.open(this.lib, { device, eidIndex, mode });
    const nonce = newNonce(), jetty = port.address, token = port.token, notify = port.notify;
    const rjetty = toHex(port.jettyDescription);
    const side = PreparedUrmaSide.prepare(port, {
      regionSize: ctx.sizes.server,
      remoteSize: ctx.sizes.client,
      bounceBytes: bounceBytesFor(ctx.sizes.maxMessage),
      role: ROLE_SERVER,
      nonce,
    });
    const offer: z.input<typeof urmaOfferSchema> = {
      v: 3,
      jetty,
      token,
      notify,
      mode,
      seg: toHex(side.segmentDescriptor),
      segDesc: toHex(side.segmentDescription),
      rjetty,
      serverSize: ctx.sizes.server,
      clientSize: ctx.sizes.client,
      fabricPage: FABRIC_PAGE,
      nonce: toHex(nonce),
    };
    return {
      offer,
      connect: (): Promise<FabricEndpoint> =>
        side.acceptClient(
          {
            jetty: client.jetty,
            token: client.token,
            notify: client.notify,
            ...(client.rjetty ? { jettyDescription: fromHex(client.rjetty) } : {}),
          },
          HANDSHAKE_WAIT_MS,
        ),
      abort: () => side.abort(),
    };
  }

  close(): void {}
}

/** Client side of the URMA fabric. Its port (context, jetty) exists from creation to open(). */
class UrmaClientProvider implements ClientFabricProvider {
  readonly kind = "urma" as const;
  readonly label: string;
  #port: UrmaPort | null;

  constructor(private readonly lib: UrmaLib, port: UrmaPort) {
    this.#port = port;
    this.label = lib.simulated ? "urma (simulated)" : "urma";
  }

  params(): unknown {
    const port = this.#port;
    if (!port) return {};
    const params: z.input<typeof urmaParamsSchema> = {
      v: 3,
      jetty: port.address,
      token: port.token,
      notify: port.notify,
      mode: port.mode,
      simulated: this.lib.simulated,
      rjetty: toHex(port.jettyDescription),
    };
    return params;
  }

  async open(offer: unknown, sizes: SessionSizes): Promise<FabricEndpoint> {
    const port = this.#port;
    if (!port) throw new VerbusError("HANDSHAKE", "urma provider already used or closed");
    const offered = parseOptions(urmaOfferSchema, offer, "urma offer", "HANDSHAKE");
    if (offered.serverSize !== sizes.server || offered.clientSize !== sizes.client) {
      throw new VerbusError(
        "HANDSHAKE",
        `urma offer sizes (${offered.serverSize}/${offered.clientSize}) disagree with the negotiated sizes (${sizes.server}/${sizes.client})`,
      );
    }
    if (offered.mode !== port.mode) {
      throw new VerbusError(
        "HANDSHAKE",
        `urma offer mode ${offered.mode}, this client runs ${port.mode}`,
      );
    }
    this.#port = null;
    let side: PreparedUrmaSide;
    try {
      side = PreparedUrmaSide.prepare(port, {
        regionSize: sizes.client,
        remoteSize: sizes.server,
        bounceBytes: bounceBytesFor(sizes.maxMessage),
        role: ROLE_CLIENT,
        nonce: nonceFromHex(offered.nonce),
      });
    } catch (e) {
      throw new VerbusError("HANDSHAKE", `urma: cannot prepare this side: ${firstLine(e)}`);
    }
    const server = {
      segment: fromHex(offered.seg),
      ...(offered.segDesc ? { segmentDescription: fromHex(offered.segDesc) } : {}),
      ...(offered.rjetty ? { jettyDescription: fromHex(offered.rjetty) } : {}),
      jetty: offered.jetty,
      token: offered.token,
      notify: offered.notify,
    };
    return await side.connectToServer(server, HANDSHAKE_WAIT_MS);
  }

  close(): void {
    this.#port?.close();
    this.#port = null;
  }
}

/**
 * The URMA server provider, or why URMA cannot be offered here (never throws). `options` is the
 * URMA part of the provider options; `log` gets one line naming the library in use.
 */
export async function createServerProvider(
  options: ProviderOptions,
  log: (line: string) => void,
): Promise<ServerFabricProvider | string> {
  const opened = await openLibrary(options);
  if (typeof opened === "string") return opened;
  const { lib, options: o } = opened;
  log(
    `urma: ${
      lib.simulated ? "SIMULATED liburma" : "liburma"
    } ${lib.path} (${lib.version}), mode ${o.mode}`,
  );
  return new UrmaServerProvider(lib, o);
}

/**
 * The URMA client provider with its jetty open (for the hello), or why URMA cannot be used from
 * here (never throws). One provider serves one `open()`.
 */
export async function createClientProvider(
  options: ProviderOptions,
): Promise<ClientFabricProvider | string> {
  const opened = await openLibrary(options);
  if (typeof opened === "string") return opened;
  const { lib, options: o } = opened;
  try {
    const port = UrmaPort.open(lib, { device: o.device, eidIndex: o.eidIndex, mode: o.mode });
    return new UrmaClientProvider(lib, port);
  } catch (e) {
    return `cannot open URMA: ${firstLine(e)}`;
  }
}
