/**
 * Whether this host can run brpc's RDMA mode, for `verbus doctor`: the helper and libibverbs
 * load, and a device has an ACTIVE port with a GID brpc would use (interface id not zero).
 * librdmacm is not needed (brpc brings QPs up with raw `ibv_modify_qp`). Pure over the verbs
 * probe's findings; never throws.
 * @module
 */
import type { LibraryStatus } from "../library_status.ts";
import type { RdmaCapabilities } from "../verbs/probe.ts";

/** The doctor's line on brpc's RDMA mode. */
export interface BrpcRdmaCapability {
  usable: boolean;
  /** Where it would run (device, port, GID index), when usable. */
  where?: string;
  /** Why not, when not usable. */
  reason?: string;
}

/** Judges brpc's RDMA mode from what the helper and verbs probes found. */
export function brpcRdmaCapability(
  helperOk: boolean,
  libibverbs: LibraryStatus,
  rdma: RdmaCapabilities,
): BrpcRdmaCapability {
  if (!helperOk) return { usable: false, reason: "the C helper is not usable" };
  if (!libibverbs.found) return { usable: false, reason: "libibverbs not found" };
  if (rdma.devices.length === 0) return { usable: false, reason: rdma.reason ?? "no RDMA devices" };
  for (const d of rdma.devices) {
    for (const p of d.ports) {
      if (p.state !== "ACTIVE") continue;
      const g = [...p.gids].reverse().find((x) => !/^0000:0000:0000:0000$/.test(x.gid.slice(20)));
      if (g) return { usable: true, where: `${d.name} port ${p.port}, gid[${g.index}] ${g.gid}` };
    }
  }
  return { usable: false, reason: "no RDMA device has an ACTIVE port with a usable GID" };
}
