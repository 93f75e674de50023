/**
 * TEMPORARY test bridge — delete it (and its imports in fabric_verbs_util.ts and run.sh) once
 * rpc/ uses transport/registry.ts. Until then rpc/session/providers.ts still expects a fabric
 * module to call `registerFabric` with the OLD provider contract (endpoint at offer time,
 * `confirm()`), while transport/verbs/provider.ts implements the new one (transport/provider.ts).
 * Importing this module registers adapters from the new verbs providers to the old contract,
 * so the rpc-level VM suites (and the region suite over verbs) exercise the new providers.
 *
 * The server's endpoint must exist at offer time in the old contract: a {@link DeferredEndpoint}
 * stands in (its `local` is the prepared region) and forwards to the connected endpoint once
 * `confirm()` connected it. Test code only.
 * @module
 */
import type { RegionLayout } from "../../rpc/region/layout.ts";
import type { ClientHello } from "../../rpc/session/hello.ts";
import { registerFabric } from "../../rpc/session/providers.ts";
import type { Completions, FabricEndpoint } from "../../transport/fabric.ts";
import { FAILED } from "../../transport/fabric.ts";
import type { FabricFaults } from "../../transport/faults.ts";
import type { SessionSizes } from "../../transport/provider.ts";
import { createClientProvider, createServerProvider } from "../../transport/verbs/provider.ts";
import type { VerbsServerOffer } from "../../transport/verbs/server_offer.ts";

function sizesOf(server: RegionLayout, client: RegionLayout): SessionSizes {
  return {
    server: server.size,
    client: client.size,
    maxMessage: Math.max(server.config.slotSize, client.config.slotSize),
  };
}

/** The server's endpoint before the ACK: the prepared region, then the connected endpoint. */
class DeferredEndpoint implements FabricEndpoint {
  readonly kind = "verbs" as const;
  readonly simulated = false;
  readonly local: Uint8Array;
  #inner: FabricEndpoint | null = null;
  #closed = false;

  constructor(private readonly offer: VerbsServerOffer, readonly remoteSize: number) {
    this.local = offer.local;
  }

  connected(ep: FabricEndpoint): void {
    if (this.#closed) ep.close();
    else this.#inner = ep;
  }

  get failed(): boolean {
    return this.#inner ? this.#inner.failed : true;
  }
  get failureReason(): string | null {
    return this.#inner ? this.#inner.failureReason ?? null : "not connected";
  }
  get faults(): FabricFaults {
    return this.#inner!.faults;
  }
  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number {
    return this.#inner ? this.#inner.write(wrId, remoteOff, src, flags) : FAILED;
  }
  writeSg(w: number, off: number, sg: readonly Uint8Array[], n: number, flags: number): number {
    return this.#inner ? this.#inner.writeSg(w, off, sg, n, flags) : FAILED;
  }
  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number {
    return this.#inner ? this.#inner.writeU32(wrId, remoteOff, value, flags) : FAILED;
  }
  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number {
    return this.#inner ? this.#inner.read(wrId, dst, remoteOff, flags) : FAILED;
  }
  flush(): void {
    this.#inner?.flush();
  }
  poll(out: Completions): number {
    return this.#inner ? this.#inner.poll(out) : 0;
  }
  statusText(status: number): string {
    return this.#inner ? this.#inner.statusText(status) : `status ${status}`;
  }
  doorbell(): number {
    return this.#inner ? this.#inner.doorbell() : 0;
  }
  kick(): void {
    this.#inner?.kick();
  }
  waitInbound(seen: number, timeoutMs: number): Promise<boolean> {
    return this.#inner
      ? this.#inner.waitInbound(seen, timeoutMs)
      : new Promise((r) => setTimeout(() => r(false), Math.min(timeoutMs, 50)));
  }
  fail(reason: string): void {
    if (this.#inner) this.#inner.fail(reason);
    else this.close();
  }
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#inner) this.#inner.close();
    else this.offer.abort("the session closed before the ACK");
  }
}

registerFabric(
  "verbs",
  async (opts, log) => {
    const p = await createServerProvider(opts.verbs, log);
    if (typeof p === "string") return p;
    return {
      kind: "verbs",
      refuse: (hello: ClientHello) =>
        p.refuse({ bootId: "", pid: 0, host: "" }, hello.params?.verbs),
      async offer(ctx) {
        const offer = await p.offer({
          sessionId: ctx.sessionId,
          sizes: sizesOf(ctx.server, ctx.client),
          peer: { bootId: "", pid: 0, host: ctx.peerHost },
          params: ctx.params,
        }) as VerbsServerOffer;
        const endpoint = new DeferredEndpoint(offer, ctx.client.size);
        return {
          endpoint,
          offer: offer.offer,
          async confirm() {
            try {
              endpoint.connected(await offer.connect());
              return true;
            } catch (e) {
              log(`verbs session ${ctx.sessionId}: ${(e as Error).message}`);
              return false;
            }
          },
        };
      },
      close: () => p.close(),
    };
  },
  async (opts) => {
    const p = await createClientProvider(opts.verbs);
    if (typeof p === "string") return p;
    return {
      kind: "verbs",
      label: p.label,
      params: () => p.params(),
      open: (offer: unknown, server: RegionLayout, client: RegionLayout) =>
        p.open(offer, sizesOf(server, client)),
      close: () => p.close(),
    };
  },
);
