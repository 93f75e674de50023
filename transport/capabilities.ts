/**
 * What this host can do, in one summary: the runtime, the C helper, each native library (found
 * or not, with every path tried), RDMA devices with ports and GIDs, URMA, shared memory — and
 * therefore which fabrics are usable. `verbus doctor` prints this. Each fabric probes its own
 * part (`shm/probe.ts`, `verbs/probe.ts`, `urma/probe.ts`); this file only gathers them.
 * Control path; never throws: every failure becomes a reason string.
 * @module
 */
import { probeHelper } from "../ffi/helper.ts";
import { RUNTIME, runtimeVersion } from "../util/runtime.ts";
import type { LibraryStatus } from "./library_status.ts";
import type { FabricKind } from "./registry.ts";
import { probeShm, type ShmCapabilities } from "./shm/probe.ts";
import { probeUrma, type UrmaCapabilities } from "./urma/probe.ts";
import { probeVerbs, type RdmaCapabilities } from "./verbs/probe.ts";
import { type BrpcRdmaCapability, brpcRdmaCapability } from "./brpc_rdma/probe.ts";

export type { LibraryStatus } from "./library_status.ts";
export type { GidInfo, PortInfo, RdmaDeviceInfo } from "./verbs/probe.ts";

/** The fabrics a host can use: the fast ones ({@link FabricKind}) and TCP, which is always there. */
export type FabricName = FabricKind | "tcp";

/** Everything doctor reports. */
export interface HostCapabilities {
  runtime: { name: string; version: string };
  helper: LibraryStatus & { version?: string; layoutOk: boolean; layoutEntries?: number };
  libraries: { libibverbs: LibraryStatus; librdmacm: LibraryStatus; liburma: LibraryStatus };
  rdma: RdmaCapabilities;
  urma: UrmaCapabilities;
  shm: ShmCapabilities;
  /** brpc's RDMA mode (`brpcRdma` / `--brpc-rdma`): can this host run it. */
  brpcRdma: BrpcRdmaCapability;
  /** Fabrics this host can use, best first; TCP is always there. */
  fabrics: FabricName[];
}

/**
 * Probes the host. Never throws. `urmaPath` names a liburma explicitly (the simulator is used
 * only this way, or through VERBUS_LIBURMA).
 */
export async function probeHost(urmaPath?: string): Promise<HostCapabilities> {
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
  const [verbs, urma, shm] = await Promise.all([
    probeVerbs(h.ok),
    probeUrma(urmaPath),
    probeShm(),
  ]);
  const fabrics: FabricName[] = [];
  if (verbs.usable) fabrics.push("verbs");
  if (urma.usable) fabrics.push("urma");
  if (shm.usable && h.ok) fabrics.push("shm"); // the futex doorbell needs the helper
  fabrics.push("tcp");
  return {
    runtime: { name: RUNTIME, version: runtimeVersion() },
    helper,
    libraries: { libibverbs: verbs.libibverbs, librdmacm: verbs.librdmacm, liburma: urma.liburma },
    rdma: verbs.rdma,
    urma: urma.urma,
    shm,
    brpcRdma: brpcRdmaCapability(h.ok, verbs.libibverbs, verbs.rdma),
    fabrics,
  };
}
