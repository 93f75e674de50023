/**
 * The shm fabric as a provider (see fabric_provider.ts): offered only to a client that proves
 * it runs on this host (same boot id, and it maps the session's object and copies the nonce).
 * @module
 */
import type { Helper } from "../../ffi/helper.ts";
import { loadHelper } from "../../ffi/helper.ts";
import type { FabricEndpoint } from "../../transport/fabric.ts";
import { removeStaleShmObjects } from "../../transport/shm/shm_object.ts";
import { VerbusError } from "../../errors.ts";
import type { RegionLayout } from "../region/layout.ts";
import type {
  ClientFabricProvider,
  OfferContext,
  ServerFabricProvider,
  ServerOffer,
} from "./fabric_provider.ts";
import { bootId, type ClientHello, shmOfferSchema } from "./hello.ts";
import { checkShmProof, createShmSession, openShmSession } from "./shm_setup.ts";

/** Server side of the shm fabric. */
export class ShmServerProvider implements ServerFabricProvider {
  readonly kind = "shm" as const;
  private constructor(private readonly helper: Helper | null, private readonly why: string) {}

  /** Loads the helper and removes shm objects left by dead processes; never throws. */
  static async create(log: (line: string) => void): Promise<ShmServerProvider> {
    try {
      const helper = await loadHelper();
      const stale = await removeStaleShmObjects();
      if (stale.length) {
        log(`removed ${stale.length} shm object(s) left by dead processes: ${stale.join(", ")}`);
      }
      return new ShmServerProvider(helper, "");
    } catch (e) {
      return new ShmServerProvider(
        null,
        `server has no helper library (${(e as Error).message.split("\n")[0]})`,
      );
    }
  }

  refuse(hello: ClientHello): string | undefined {
    if (!this.helper) return this.why;
    const mine = bootId();
    if (!mine || hello.bootId !== mine) return "client runs on another host (boot ids differ)";
    return undefined;
  }

  async offer(ctx: OfferContext): Promise<ServerOffer> {
    const { endpoint, offer } = await createShmSession(
      this.helper!,
      ctx.sessionId,
      ctx.server,
      ctx.client,
    );
    return {
      endpoint,
      offer,
      confirm: () => {
        if (!checkShmProof(endpoint, offer)) return false;
        endpoint.mapping.unlink(); // both sides hold a mapping: the name is no longer needed
        return true;
      },
    };
  }

  close(): void {}
}

/** Client side of the shm fabric. */
export class ShmClientProvider implements ClientFabricProvider {
  readonly kind = "shm" as const;
  readonly label = "shm";
  private constructor(private readonly helper: Helper) {}

  /** The provider, or the reason shm cannot be used from this process. */
  static async create(): Promise<ShmClientProvider | string> {
    try {
      return new ShmClientProvider(await loadHelper());
    } catch (e) {
      return `shm unavailable here: ${(e as Error).message.split("\n")[0]}`;
    }
  }

  params(): unknown {
    return {};
  }

  async open(offer: unknown, server: RegionLayout, client: RegionLayout): Promise<FabricEndpoint> {
    const r = shmOfferSchema.safeParse(offer);
    if (!r.success) {
      const i = r.error.issues[0];
      throw new VerbusError(
        "HANDSHAKE",
        `shm offer: field ${i.path.join(".") || "(root)"}: ${i.message}`,
      );
    }
    return await openShmSession(this.helper, r.data, server, client);
  }

  close(): void {}
}
