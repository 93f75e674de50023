/**
 * Which fabric providers exist, and building them for a server or a client. shm is built in;
 * RDMA verbs and URMA are loaded on demand (dynamic import) so a host without them never loads
 * their code. A fabric that cannot be built becomes a refusal reason, never a crash.
 * @module
 */
import type { FabricKind } from "../../transport/fabric.ts";
import type { ClientFabricProvider, ServerFabricProvider } from "./fabric_provider.ts";
import { ShmClientProvider, ShmServerProvider } from "./shm_provider.ts";

/** Options a provider factory may read (each provider validates its own part). */
export type ProviderOptions = Readonly<Record<string, unknown>>;

type ServerFactory = (
  opts: ProviderOptions,
  log: (line: string) => void,
) => Promise<ServerFabricProvider | string>;
type ClientFactory = (opts: ProviderOptions) => Promise<ClientFabricProvider | string>;

const serverFactories: Partial<Record<FabricKind, ServerFactory>> = {
  shm: (_o, log) => ShmServerProvider.create(log),
};
const clientFactories: Partial<Record<FabricKind, ClientFactory>> = {
  shm: () => ShmClientProvider.create(),
};

/** Registers the factories of a fabric (the verbs and urma modules call this). */
export function registerFabric(
  kind: FabricKind,
  server: ServerFactory,
  client: ClientFactory,
): void {
  serverFactories[kind] = server;
  clientFactories[kind] = client;
}

/** Imports the module that registers `kind` (literal specifiers, so bundlers include them). */
function load(kind: FabricKind): Promise<unknown> {
  switch (kind) {
    case "verbs":
      return import("../../transport/verbs/provider.ts");
    case "urma":
      return import("../../transport/urma/provider.ts");
    default:
      return Promise.resolve();
  }
}

async function ensure(kind: FabricKind): Promise<string | undefined> {
  if (serverFactories[kind]) return undefined;
  try {
    await load(kind);
  } catch (e) {
    return `${kind} provider failed to load: ${(e as Error).message.split("\n")[0]}`;
  }
  return serverFactories[kind] ? undefined : `no ${kind} provider in this build`;
}

/** Builds the server providers for `kinds`; those that cannot run come back as reasons. */
export async function serverProviders(
  kinds: readonly FabricKind[],
  opts: ProviderOptions,
  log: (line: string) => void,
): Promise<{ providers: ServerFabricProvider[]; refused: Record<string, string> }> {
  const providers: ServerFabricProvider[] = [];
  const refused: Record<string, string> = {};
  for (const k of kinds) {
    const why = await ensure(k);
    const p = why ?? await serverFactories[k]!(opts, log);
    if (typeof p === "string") refused[k] = p;
    else providers.push(p);
  }
  return { providers, refused };
}

/** Builds the client providers for `kinds`; those that cannot run come back as reasons. */
export async function clientProviders(
  kinds: readonly FabricKind[],
  opts: ProviderOptions,
): Promise<{ providers: ClientFabricProvider[]; refused: Record<string, string> }> {
  const providers: ClientFabricProvider[] = [];
  const refused: Record<string, string> = {};
  for (const k of kinds) {
    const why = await ensure(k);
    const p = why ?? await clientFactories[k]!(opts);
    if (typeof p === "string") refused[k] = p;
    else providers.push(p);
  }
  return { providers, refused };
}
