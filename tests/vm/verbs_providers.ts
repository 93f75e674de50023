/**
 * The verbs providers as the VM suites drive them through the fabric contract alone (no rpc
 * layer): a server provider on rxe1, a client provider bound to rxe0, an offer, and waiting
 * for a completion. Shared by verbs_provider_test.ts and verbs_write_log_test.ts.
 */
import { Completions, type FabricEndpoint } from "../../transport/fabric.ts";
import type { ServerOffer, SessionSizes } from "../../transport/provider.ts";
import {
  createClientProvider,
  createServerProvider,
  type VerbsServerProvider,
} from "../../transport/verbs/provider.ts";
import { CLIENT_ADDR, SERVER_ADDR } from "./fabric_verbs_util.ts";

export const SIZES: SessionSizes = { server: 256 << 10, client: 128 << 10, maxMessage: 8192 };
export const PEER = { bootId: "", pid: 0, host: CLIENT_ADDR };
/** Where the tests write (past the fabric header and the rpc layer's first words). */
export const AT = 4096;

export async function server(mode: "poll" | "event", extra: Record<string, unknown> = {}) {
  const p = await createServerProvider({ addr: SERVER_ADDR, mode, ...extra }, () => {});
  if (typeof p === "string") throw new Error(p);
  return p as VerbsServerProvider;
}

export async function client(mode: "poll" | "event", extra: Record<string, unknown> = {}) {
  const p = await createClientProvider({ sourceAddr: CLIENT_ADDR, mode, ...extra });
  if (typeof p === "string") throw new Error(p);
  return p;
}

export function offerOf(p: VerbsServerProvider, sessionId = 1): Promise<ServerOffer> {
  return p.offer({ sessionId, sizes: SIZES, peer: PEER, params: { mode: "event" } });
}

/** Polls `ep` until the completion of `wrId` arrives (5 s); returns its status. */
export async function completion(ep: FabricEndpoint, wrId: number): Promise<number> {
  const out = new Completions(16), end = Date.now() + 5000;
  while (Date.now() < end) {
    const n = ep.poll(out);
    for (let i = 0; i < n; i++) if (out.wrId[i] === wrId) return out.status[i];
    if (n === 0) await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`no completion for ${wrId}`);
}
