/**
 * The fabrics verbus knows, and how to reach each one's provider. One constant,
 * {@link FABRICS}, is the single list every zod enum, CLI choice and type derives from. Each
 * fabric's `provider.ts` is loaded lazily (literal dynamic imports, so bundlers include them) and
 * only when asked for, so a host without RDMA never loads the verbs code. Loading has no side
 * effects; a fabric that cannot be built becomes a reason string, never a crash.
 * Control path; one JS thread.
 * @module
 */
import { z } from "zod";
import type { ClientFabricProvider, FabricModule, ServerFabricProvider } from "./provider.ts";

/** The fast fabrics, best first when a host has several (TCP is the control plane, not a fabric). */
export const FABRICS = ["shm", "verbs", "urma"] as const;
/** One of {@link FABRICS}. */
export type FabricKind = (typeof FABRICS)[number];
/** zod enum of {@link FABRICS} (options, hellos, CLI flags). */
export const fabricKindSchema: z.ZodEnum<{ [K in FabricKind]: K }> = z.enum(FABRICS);

/** The static table of lazy loaders, one per fabric. */
const LOADERS: Readonly<Record<FabricKind, () => Promise<FabricModule>>> = {
  shm: () => import("./shm/provider.ts"),
  verbs: () => import("./verbs/provider.ts"),
  urma: () => import("./urma/provider.ts"),
};

/** Loads a fabric's module; a string says why it could not be loaded. */
export async function loadFabric(kind: FabricKind): Promise<FabricModule | string> {
  try {
    return await LOADERS[kind]();
  } catch (e) {
    return `${kind} provider failed to load: ${(e as Error).message.split("\n")[0]}`;
  }
}

/** Per-fabric provider options, keyed by fabric (each provider validates its own part). */
export type ProviderOptionsByKind = Readonly<Partial<Record<string, unknown>>>;

/** Providers that could be built, and why the others could not. */
export interface Providers<P> {
  providers: P[];
  refused: Partial<Record<FabricKind, string>>;
}

async function build<P>(
  kinds: readonly FabricKind[],
  make: (m: FabricModule, k: FabricKind) => Promise<P | string>,
): Promise<Providers<P>> {
  const providers: P[] = [];
  const refused: Partial<Record<FabricKind, string>> = {};
  for (const k of kinds) {
    const m = await loadFabric(k);
    const p = typeof m === "string" ? m : await make(m, k);
    if (typeof p === "string") refused[k] = p;
    else providers.push(p);
  }
  return { providers, refused };
}

/** Builds the server providers for `kinds`; those that cannot run come back as reasons. */
export function serverProviders(
  kinds: readonly FabricKind[],
  options: ProviderOptionsByKind,
  log: (line: string) => void,
): Promise<Providers<ServerFabricProvider>> {
  return build(kinds, (m, k) => m.createServerProvider(options[k], log));
}

/** Builds the client providers for `kinds`; those that cannot run come back as reasons. */
export function clientProviders(
  kinds: readonly FabricKind[],
  options: ProviderOptionsByKind,
): Promise<Providers<ClientFabricProvider>> {
  return build(kinds, (m, k) => m.createClientProvider(options[k]));
}
