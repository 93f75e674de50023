/**
 * What this host can do, in one summary: the runtime, the C helper, each native library (found
 * or not, with every path tried), each fabric's findings (RDMA devices with ports and GIDs, URMA,
 * shared memory) — and therefore which fabrics are usable. `verbus doctor` prints this. Each
 * fabric probes its own part through its descriptor (`registry.ts`); this file only gathers them,
 * and gives doctor each fabric's own lines. Control path; never throws: every failure becomes a
 * reason string.
 * @module
 */
import { probeHelper } from "../ffi/helper.ts";
import { RUNTIME, runtimeVersion } from "../util/runtime.ts";
import type { AnyFabricDescriptor, FabricProbe } from "./fabric_descriptor.ts";
import type { FabricKind } from "./registry.ts";
import type { LibraryStatus } from "./library_status.ts";
import { FABRIC_DESCRIPTORS, type FabricReports } from "./registry.ts";
import { type BrpcRdmaCapability, brpcRdmaCapability } from "./brpc_rdma/probe.ts";
import type { RdmaCapabilities } from "./verbs/probe.ts";

export type { LibraryStatus } from "./library_status.ts";
export type { GidInfo, PortInfo, RdmaDeviceInfo } from "./verbs/probe.ts";

/** The fabrics a host can use: the fast ones ({@link FabricKind}) and TCP, which is always there. */
export type FabricName = FabricKind | "tcp";

/**
 * Everything doctor reports. Each fabric's findings sit under its descriptor's section
 * ({@link FabricReports}: `rdma`, `urma`, `shm`); a fabric given to {@link probeHost} beside the
 * registered ones adds its own section the same way.
 */
export interface HostCapabilities extends FabricReports {
  runtime: { name: string; version: string };
  helper: LibraryStatus & { version?: string; layoutOk: boolean; layoutEntries?: number };
  /** Every native library a fabric looked for, by name (libibverbs, librdmacm, liburma). */
  libraries: Record<string, LibraryStatus>;
  /** brpc's RDMA mode (`brpcRdma` / `--brpc-rdma`): can this host run it. */
  brpcRdma: BrpcRdmaCapability;
  /** Fabrics this host can use, best first; TCP is always there. */
  fabrics: FabricName[];
}

/**
 * Probes the host for every fabric of `fabrics` (default: the registered ones). Never throws.
 * `urmaPath` names a liburma explicitly (the simulator is used only this way, or through
 * VERBUS_LIBURMA).
 */
export async function probeHost(
  urmaPath?: string,
  fabrics: readonly AnyFabricDescriptor[] = FABRIC_DESCRIPTORS,
): Promise<HostCapabilities> {
  const h = await probeHelper();
  const helper: HostCapabilities["helper"] = h.ok
    ? {
      found: true,
      path: h.helper.lib.path,
      source: h.helper.lib.source,
      tried: [...h.helper.lib.attempts],
      version: h.helper.version,
      layoutOk: true,
      layoutEntries: h.helper.layouts.size,
    }
    : {
      found: !!h.probe?.ok,
      tried: h.probe && !h.probe.ok ? [...h.probe.error.attempts] : [],
      error: h.error.message,
      layoutOk: false,
    };
  const ctx = { helperLoaded: h.ok, libraryPaths: urmaPath ? { urma: urmaPath } : {} };
  const ranked = [...fabrics].sort((a, b) => a.rank - b.rank);
  const probes: FabricProbe<unknown>[] = await Promise.all(ranked.map((d) => d.probe(ctx)));
  const libraries: Record<string, LibraryStatus> = {};
  const sections: Record<string, unknown> = {};
  // libraries in registry order (libibverbs, librdmacm, liburma), sections and fabrics by rank
  for (const d of fabrics) Object.assign(libraries, probes[ranked.indexOf(d)].libraries);
  ranked.forEach((d, i) => sections[d.section] = probes[i].report);
  const usable = ranked.filter((_, i) => probes[i].usable).map((d) => d.kind as FabricName);
  const rdma = sections.rdma as RdmaCapabilities | undefined;
  return {
    runtime: { name: RUNTIME, version: runtimeVersion() },
    helper,
    libraries,
    ...(sections as unknown as FabricReports),
    brpcRdma: rdma && libraries.libibverbs
      ? brpcRdmaCapability(h.ok, libraries.libibverbs, rdma)
      : { usable: false, reason: "the verbs fabric is not registered" },
    fabrics: [...usable, "tcp"],
  };
}

/**
 * Each fabric's lines of `verbus doctor` for `caps`, in the order probeHost lists fabrics:
 * what its descriptor says of its section. `fabrics` as given to {@link probeHost}.
 */
export function fabricDoctorLines(
  caps: HostCapabilities,
  fabrics: readonly AnyFabricDescriptor[] = FABRIC_DESCRIPTORS,
): string[] {
  const sections = caps as unknown as Record<string, unknown>;
  return [...fabrics].sort((a, b) => a.rank - b.rank)
    .filter((d) => d.section in sections)
    .flatMap((d) => d.doctor(sections[d.section]));
}
