/**
 * The fabrics verbus knows: one descriptor per fabric (`transport/<fabric>/descriptor.ts`), one
 * entry each in {@link REGISTERED} below (its import and its place in the list, best first), the
 * only list there is: {@link FABRICS}, {@link FabricKind}, {@link fabricKindSchema} and
 * {@link FABRIC_DESCRIPTORS} derive from it, and everything that lists fabrics iterates those:
 * the providers here, capabilities and doctor, the CLI's choices, the shared fabric suites. The
 * contract (fabric.ts, provider.ts) names a fabric with the leaf `fabric_kinds.ts`'s
 * `AnyFabricKind`, never through this list of its implementations. Each fabric's `provider.ts` is
 * loaded lazily (its descriptor's literal dynamic import, so bundlers include it) and only when
 * asked for, so a host without RDMA never loads the verbs code. Loading has no side effects; a
 * fabric that cannot be built becomes a reason string, never a crash.
 * Control path; one JS thread.
 * @module
 */
import { z } from "zod";
import type { AnyFabricDescriptor, FabricDescriptor } from "./fabric_descriptor.ts";
import { fabricNameSchema } from "./fabric_kinds.ts";
import type { ClientFabricProvider, FabricModule, ServerFabricProvider } from "./provider.ts";
import { shmFabric } from "./shm/descriptor.ts";
import { urmaFabric } from "./urma/descriptor.ts";
import { verbsFabric } from "./verbs/descriptor.ts";

export { fabricNameSchema } from "./fabric_kinds.ts";

/** The registered fabrics' descriptors, best first when a host has several: a fabric's one entry. */
const REGISTERED = [shmFabric, verbsFabric, urmaFabric] as const;

/** A registered fabric's descriptor. */
type Registered = (typeof REGISTERED)[number];
/** The name of a registered fabric (TCP is the control plane, not a fabric). */
export type FabricKind = Registered["kind"];
/** A descriptor of one of the registered kinds, whatever its section and report. */
// deno-lint-ignore no-explicit-any
export type RegisteredDescriptor = FabricDescriptor<FabricKind, string, any>;

/** The registered fabrics' names, best first (in {@link REGISTERED} order). */
export const FABRICS: readonly [FabricKind, ...FabricKind[]] = REGISTERED.map((d) => d.kind) as [
  FabricKind,
  ...FabricKind[],
];
/** zod enum of {@link FABRICS} (options, CLI flags). */
export const fabricKindSchema: z.ZodEnum<{ [K in FabricKind]: K }> = z.enum(FABRICS);

/** What each registered fabric's probe reports, under its doctor section ("rdma", "urma", "shm"). */
export type FabricReports = {
  [D in Registered as D["section"]]: D extends FabricDescriptor<string, string, infer R> ? R
    : never;
};

/** Every fabric's descriptor, in {@link FABRICS} order. */
export const FABRIC_DESCRIPTORS: readonly RegisteredDescriptor[] = REGISTERED;

/** The descriptor of `kind`. */
export function fabricDescriptor(kind: FabricKind): RegisteredDescriptor {
  return REGISTERED.find((d) => d.kind === kind) as RegisteredDescriptor;
}

/**
 * The registered descriptors followed by `extra` (descriptors a caller gives beside them, such as
 * a test's throw-away fabric), or a string naming an extra kind that is already taken or is not
 * a fabric name (hellos carry it: lowercase, at most 16 characters, never `tcp` or `auto`).
 */
export function fabricsWith(
  extra: readonly AnyFabricDescriptor[] = [],
): readonly AnyFabricDescriptor[] | string {
  if (extra.length === 0) return FABRIC_DESCRIPTORS;
  const all: AnyFabricDescriptor[] = [...FABRIC_DESCRIPTORS];
  for (const d of extra) {
    if (!fabricNameSchema.safeParse(d.kind).success) {
      return `fabric kind ${JSON.stringify(d.kind)} is not a fabric name (lowercase, at most 16 ` +
        `characters, not tcp or auto)`;
    }
    if (all.some((x) => x.kind === d.kind)) return `fabric ${d.kind} is given twice`;
    all.push(d);
  }
  return all;
}

/** Loads a fabric's module from `fabrics`; a string says why it could not be loaded. */
export async function loadFabric(
  kind: string,
  fabrics: readonly AnyFabricDescriptor[] = FABRIC_DESCRIPTORS,
): Promise<FabricModule | string> {
  const d = fabrics.find((x) => x.kind === kind);
  if (!d) return `${kind} is not a fabric this process knows`;
  try {
    return await d.load();
  } catch (e) {
    return `${kind} provider failed to load: ${(e as Error).message.split("\n")[0]}`;
  }
}

/** Per-fabric provider options, keyed by fabric (each provider validates its own part). */
export type ProviderOptionsByKind = Readonly<Partial<Record<string, unknown>>>;

/** Providers that could be built, and why the others could not (by fabric name). */
export interface Providers<P> {
  providers: P[];
  refused: Partial<Record<string, string>>;
}

async function build<P>(
  kinds: readonly string[],
  fabrics: readonly AnyFabricDescriptor[],
  make: (m: FabricModule, k: string) => Promise<P | string>,
): Promise<Providers<P>> {
  const providers: P[] = [];
  const refused: Partial<Record<string, string>> = {};
  for (const k of kinds) {
    const m = await loadFabric(k, fabrics);
    const p = typeof m === "string" ? m : await make(m, k);
    if (typeof p === "string") refused[k] = p;
    else providers.push(p);
  }
  return { providers, refused };
}

/**
 * Builds the server providers for `kinds` (fabrics of `fabrics`, by default the registered
 * ones); those that cannot run come back as reasons.
 */
export function serverProviders(
  kinds: readonly string[],
  options: ProviderOptionsByKind,
  log: (line: string) => void,
  fabrics: readonly AnyFabricDescriptor[] = FABRIC_DESCRIPTORS,
): Promise<Providers<ServerFabricProvider>> {
  return build(kinds, fabrics, (m, k) => m.createServerProvider(options[k], log));
}

/**
 * Builds the client providers for `kinds` (fabrics of `fabrics`, by default the registered
 * ones); those that cannot run come back as reasons.
 */
export function clientProviders(
  kinds: readonly string[],
  options: ProviderOptionsByKind,
  fabrics: readonly AnyFabricDescriptor[] = FABRIC_DESCRIPTORS,
): Promise<Providers<ClientFabricProvider>> {
  return build(kinds, fabrics, (m, k) => m.createClientProvider(options[k]));
}
