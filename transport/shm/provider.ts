/**
 * The shm fabric as a provider (`transport/provider.ts`): offered only to a client on this host
 * (same boot id), and connected only once the client proved it mapped the session's object by
 * stamping its own region with the session nonce (`handshake.ts`, `transport/proof.ts`).
 * A server starting up removes the objects that dead processes left behind.
 * Control path; one JS thread per provider.
 * @module
 */
import { z } from "zod";
import { type Helper, loadHelper } from "../../ffi/helper.ts";
import { checkOptions, parseOptions } from "../../util/options.ts";
import type { FabricEndpoint } from "../fabric.ts";
import { NONCE_HEX } from "../proof.ts";
import type {
  ClientFabricProvider,
  OfferContext,
  PeerInfo,
  ServerFabricProvider,
  ServerOffer,
  SessionSizes,
} from "../provider.ts";
import {
  connectShmSession,
  type NotifyPages,
  PreparedShmSession,
  type ShmOffer,
} from "./handshake.ts";
import { type NotifyRef, PeerNotifyPage, ProcessNotifyPage } from "./notify_page.ts";
import { hostBootId } from "../host.ts";
import { removeStaleAgentRings } from "../agent_ring/agent_leftovers.ts";
import { removeStaleShmObjects } from "./shm_object.ts";

/** shm's provider options (`providerOptions.shm`): none today; undefined or `{}`. */
export const shmOptionsSchema = z.object({}).strict();

/** Where a process's notify page is: the memfd fd its process holds open. */
const notifyRefSchema: z.ZodType<NotifyRef> = z.object({
  pid: z.number().int().min(1).max(1 << 22),
  fd: z.number().int().min(0).max(1 << 20),
}).strict();

/** shm's part of the client's hello: the client process's notify page, when it has one. */
export const shmParamsSchema = z.object({ notify: notifyRefSchema.optional() }).strict();

/** The shm offer as the client validates it (the server's hello carries it). */
export const shmOfferSchema: z.ZodType<ShmOffer> = z.object({
  name: z.string().regex(/^\/verbus-\d+-\d+$/),
  pid: z.number().int().min(1).max(1 << 22),
  fd: z.number().int().min(0).max(1 << 20),
  size: z.number().int().positive().max(2 ** 46),
  serverOffset: z.number().int().nonnegative(),
  serverSize: z.number().int().positive(),
  clientOffset: z.number().int().nonnegative(),
  clientSize: z.number().int().positive(),
  nonce: z.string().regex(NONCE_HEX),
  clientNonce: z.string().regex(NONCE_HEX),
  notify: notifyRefSchema.optional(),
}).strict();

/** This process's notify page, or null (logged by the caller) when it cannot be created. */
async function ownPage(helper: Helper): Promise<ProcessNotifyPage | null> {
  try {
    return await ProcessNotifyPage.forProcess(helper);
  } catch {
    return null;
  }
}

/** Both pages of a session, or null when either side has none. Throws HANDSHAKE for a bad page. */
async function sessionPages(
  own: ProcessNotifyPage | null,
  peer: NotifyRef | undefined,
  helper: Helper,
): Promise<NotifyPages | null> {
  if (own === null || peer === undefined) return null;
  return { own, peer: await PeerNotifyPage.open(peer, helper) };
}

function firstLine(e: unknown): string {
  return (e as Error).message.split("\n")[0];
}

/** Server side of the shm fabric: one shm object per session. */
class ShmServerProvider implements ServerFabricProvider {
  readonly kind = "shm" as const;
  constructor(private readonly helper: Helper, private readonly page: ProcessNotifyPage | null) {}

  refuse(peer: PeerInfo, params: unknown): string | undefined {
    const mine = hostBootId();
    if (!mine || peer.bootId !== mine) return "client runs on another host (boot ids differ)";
    const p = checkOptions(shmParamsSchema, params ?? {}, "shm hello params");
    return p.ok ? undefined : p.why;
  }

  async offer(ctx: OfferContext): Promise<ServerOffer> {
    const params = parseOptions(shmParamsSchema, ctx.params ?? {}, "shm hello params", "HANDSHAKE");
    const pages = await sessionPages(this.page, params.notify, this.helper);
    const prepared = await PreparedShmSession.prepare(
      this.helper,
      ctx.sessionId,
      ctx.sizes,
      pages,
    );
    return {
      offer: prepared.offer,
      connect: async (): Promise<FabricEndpoint> => prepared.connect(),
      abort: (reason: string): void => prepared.abort(reason),
    };
  }

  close(): void {}
}

/** Client side of the shm fabric. */
class ShmClientProvider implements ClientFabricProvider {
  readonly kind = "shm" as const;
  readonly label = "shm";
  constructor(private readonly helper: Helper, private readonly page: ProcessNotifyPage | null) {}

  params(): unknown {
    return this.page ? { notify: this.page.ref } : {};
  }

  async open(offer: unknown, sizes: SessionSizes): Promise<FabricEndpoint> {
    const o = parseOptions(shmOfferSchema, offer, "shm offer", "HANDSHAKE");
    const pages = await sessionPages(this.page, o.notify, this.helper);
    return await connectShmSession(this.helper, o, sizes, pages);
  }

  close(): void {}
}

/**
 * The shm server provider, or why this process cannot serve shm (no helper library). Removes shm
 * objects of dead processes (and logs their names). Throws INVALID_OPTIONS for bad `options`.
 */
export async function createServerProvider(
  options: unknown,
  log: (line: string) => void,
): Promise<ServerFabricProvider | string> {
  parseOptions(shmOptionsSchema, options ?? {}, "providerOptions.shm");
  try {
    const helper = await loadHelper();
    const stale = [...await removeStaleShmObjects(), ...await removeStaleAgentRings()];
    if (stale.length) {
      log(`removed ${stale.length} shm object(s) left by dead processes: ${stale.join(", ")}`);
    }
    const page = await ownPage(helper);
    if (!page) log("shm: no notify page for this process; shm sessions are polled every turn");
    return new ShmServerProvider(helper, page);
  } catch (e) {
    return `server has no helper library (${firstLine(e)})`;
  }
}

/**
 * The shm client provider, or why shm cannot be used from this process. Throws INVALID_OPTIONS
 * for bad `options`.
 */
export async function createClientProvider(
  options: unknown,
): Promise<ClientFabricProvider | string> {
  parseOptions(shmOptionsSchema, options ?? {}, "providerOptions.shm");
  try {
    const helper = await loadHelper();
    return new ShmClientProvider(helper, await ownPage(helper));
  } catch (e) {
    return `shm unavailable here: ${firstLine(e)}`;
  }
}
