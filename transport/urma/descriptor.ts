/**
 * The URMA fabric as the rest of verbus sees it (see fabric_descriptor.ts): liburma's jetties
 * across hosts (or verbus's simulated liburma, used only when named). Offered by `verbus serve`
 * only when a liburma is named. Loads nothing until asked. Control path; one JS thread.
 * @module
 */
import type { FabricDescriptor } from "../fabric_descriptor.ts";
import type { UrmaCapabilities } from "./probe.ts";

/** The URMA fabric's descriptor. */
export const urmaFabric: FabricDescriptor<"urma", "urma", UrmaCapabilities> = {
  kind: "urma",
  title: "URMA (UB jetties, across hosts)",
  rank: 2,
  section: "urma",
  servedByDefault: false,
  load: () => import("./provider.ts"),
  async probe(ctx) {
    const { probeUrma } = await import("./probe.ts");
    const p = await probeUrma(ctx.libraryPaths.urma);
    return { usable: p.usable, libraries: { liburma: p.liburma }, report: p.urma };
  },
  doctor(urma) {
    const out = ["urma"];
    if (urma.abi) out.push(`  ABI: ${urma.abi.name}, chosen by ${urma.abi.evidence}`);
    out.push(
      urma.devices.length
        ? `  devices: ${urma.devices.join(", ")}`
        : `  none: ${urma.reason?.split("\n")[0]}`,
    );
    return out;
  },
  testSettings: (ctx) => ({
    label: "urma (simulated)",
    where: "host",
    host: "127.0.0.1",
    server: { fabrics: ["urma"], providerOptions: { urma: { library: ctx.libraryPaths.urma } } },
    client: { fabric: "urma", providerOptions: { urma: { library: ctx.libraryPaths.urma } } },
  }),
};
