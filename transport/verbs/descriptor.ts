/**
 * The RDMA verbs fabric as the rest of verbus sees it (see fabric_descriptor.ts): queue pairs
 * across hosts, usable where a device has an ACTIVE port and librdmacm loads. Its tests run in
 * the Soft-RoCE VM (server on rxe1 10.77.0.2, client bound to rxe0 10.77.0.1). Loads nothing
 * until asked. Control path; one JS thread.
 * @module
 */
import type { FabricDescriptor } from "../fabric_descriptor.ts";
import type { RdmaCapabilities } from "./probe.ts";

const VM_SERVER = "10.77.0.2";
const VM_CLIENT = "10.77.0.1";

/** The verbs fabric's descriptor. */
export const verbsFabric: FabricDescriptor<"verbs", "rdma", RdmaCapabilities> = {
  kind: "verbs",
  title: "RDMA verbs (queue pairs, across hosts)",
  rank: 1,
  section: "rdma",
  servedByDefault: true,
  load: () => import("./provider.ts"),
  async probe(ctx) {
    const { probeVerbs } = await import("./probe.ts");
    const p = await probeVerbs(ctx.helperLoaded);
    return {
      usable: p.usable,
      libraries: { libibverbs: p.libibverbs, librdmacm: p.librdmacm },
      report: p.rdma,
    };
  },
  doctor: doctorLines,
  testSettings: () => ({
    label: "verbs",
    where: "vm",
    host: VM_SERVER,
    server: { fabrics: ["verbs"], providerOptions: { verbs: { addr: VM_SERVER } } },
    client: { fabric: "verbs", providerOptions: { verbs: { sourceAddr: VM_CLIENT } } },
  }),
};

/** Doctor's RDMA section: each device, its ports and GIDs, and the QP settings in use. */
function doctorLines(rdma: RdmaCapabilities): string[] {
  const out = ["rdma"];
  if (rdma.devices.length === 0) out.push(`  none: ${rdma.reason}`);
  for (const d of rdma.devices) {
    out.push(
      `  ${d.name}  guid ${d.guid}${d.fwVer ? `  fw ${d.fwVer}` : ""}${
        d.maxQp ? `  max_qp ${d.maxQp}` : ""
      }`,
    );
    if (d.error) out.push(`    error: ${d.error}`);
    for (const p of d.ports) {
      out.push(
        `    port ${p.port}: ${p.state}, ${p.linkLayer}, mtu ${p.activeMtu} (max ${p.maxMtu}), lid ${p.lid}`,
      );
      for (const g of p.gids) {
        out.push(
          `      gid[${g.index}] ${g.gid}${g.type ? `  ${g.type}` : ""}${
            g.netdev ? `  ${g.netdev}` : ""
          }`,
        );
      }
    }
  }
  const q = rdma.qpSettings;
  out.push(
    `  qp settings: timeout ${q.timeout}, retry ${q.retryCnt}, rnr_retry ${q.rnrRetry}, min_rnr_timer ${q.minRnrTimer}, path_mtu enum ${q.pathMtu}, max_rd_atomic ${q.maxRdAtomic}, sq ${q.sqDepth}, rq ${q.rqDepth}, max_sge ${q.maxSge}, max_inline ${q.maxInline}`,
  );
  return out;
}
