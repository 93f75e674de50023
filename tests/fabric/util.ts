/**
 * Helpers for the fabric suites: a small region (so many sessions fit), an in-process server with
 * the demo service, and a client connected to it.
 */
import { type Client, type ClientOptions, connect } from "../../rpc/client/client.ts";
import { demoService } from "../../examples/demo/service.ts";
import { serve, type Server, type ServiceMap } from "../../rpc/server/server.ts";
import type { FabricHostOptions } from "../../rpc/session/server/fabric_host.ts";
import { getEnv } from "../../ffi/runtime.ts";
import type { FabricTestSettings } from "../../transport/fabric_descriptor.ts";
import { fabricDescriptor, type FabricKind, FABRICS } from "../../transport/registry.ts";
import { testFabricService } from "../fixtures/test_service.ts";
import { SIM_ABI, simPathFor } from "../urma/sim_path.ts";

/**
 * Which fabric this run of the suite exercises: `VERBUS_TEST_FABRIC` = shm (default), urma (the
 * simulated liburma of this build) or verbs (inside the Soft-RoCE VM: server on rxe1 10.77.0.2,
 * client bound to rxe0 10.77.0.1), or any registered fabric whose descriptor has test settings.
 * The same tests run over each.
 */
export const FABRIC = (getEnv("VERBUS_TEST_FABRIC") ?? "shm") as FabricKind;
if (!(FABRICS as readonly string[]).includes(FABRIC)) {
  throw new Error(`VERBUS_TEST_FABRIC=${FABRIC}: expected one of ${FABRICS.join(", ")}`);
}
const SETTINGS = testSettings(FABRIC);
/** What `client.fabric` says for {@link FABRIC}. */
export const FABRIC_LABEL: string = SETTINGS.label;
/** A reason to skip a test that only makes sense on shm (undefined on shm). */
export const SHM_ONLY: string | false = FABRIC === "shm"
  ? false
  : `shm-specific (this run exercises ${FABRIC})`;
const HOST = SETTINGS.host;

/** How the suites run over `kind` (its descriptor's test settings, with this build's libraries). */
function testSettings(kind: FabricKind): FabricTestSettings {
  const settings = fabricDescriptor(kind).testSettings?.({
    libraryPaths: { urma: simPathFor(SIM_ABI) },
  });
  if (!settings) throw new Error(`VERBUS_TEST_FABRIC=${kind}: its descriptor has no test settings`);
  return settings;
}

function serverFabric(): Partial<FabricHostOptions> {
  return SETTINGS.server as Partial<FabricHostOptions>;
}

function clientFabric(): ClientOptions {
  return SETTINGS.client as ClientOptions;
}

/** A small region: 64 slots of 4 KiB, 1 MiB BULK, 16 × 64 KiB object slabs, 1 MiB staging. */
export const SMALL_REGION = {
  slots: 64,
  slotSize: 4096,
  bulkSize: 1 << 20,
  objectSlabs: 16,
  objectSlabSize: 65536,
  stagingSize: 1 << 21,
};

/** Warnings and info lines the server logged (tests assert on them). */
export interface Logged {
  warnings: string[];
  infos: string[];
}

/** An in-process server with the demo service, a test service and the `extra` services. */
export async function startServer(
  fabric: FabricHostOptions | false = {},
  extra: ServiceMap = {},
): Promise<{ server: Server; log: Logged }> {
  const log: Logged = { warnings: [], infos: [] };
  const server = await serve({
    port: 0,
    host: HOST,
    services: {
      // No imageDir: the demo makes a private one only at an image upload (none here).
      ...demoService(),
      "test.Fabric": testFabricService(),
      ...extra,
    },
    fabric: fabric === false ? false : { region: SMALL_REGION, ...serverFabric(), ...fabric },
    logger: { warn: (m) => log.warnings.push(m), info: (m) => log.infos.push(m) },
  });
  return { server, log };
}

/** A client of `server` with the small region. */
export function client(server: Server, options: ClientOptions = {}): Promise<Client> {
  return connect({ host: HOST, port: server.port }, {
    region: SMALL_REGION,
    logger: { warn: () => {} },
    ...clientFabric(),
    ...options,
  });
}

export { expectedSized, sized } from "../fixtures/test_service.ts";

/** Bytes with a pattern depending on `seed`. */
export function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 13 + seed * 7) & 0xff;
  return b;
}

/** Polls `cond` until true or `ms` pass. */
export async function until(cond: () => boolean, ms = 5000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Calls test.Fabric/Echo with `body` every 20 ms (up to `ms`) while the answer comes over TCP:
 * the first answer that came over the fabric again (after a re-negotiation), or the last one.
 */
export async function echoUntilFabric(c: Client, body: Uint8Array, ms = 5000) {
  let r = await c.call("test.Fabric", "Echo", body);
  const end = Date.now() + ms;
  while (r.path === "TCP_FALLBACK" && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    r = await c.call("test.Fabric", "Echo", body);
  }
  return r;
}
