/**
 * The shm fabric as the rest of verbus sees it (see fabric_descriptor.ts): shared memory between
 * processes of one host, usable where a POSIX shm object maps and the C helper loaded (its futex
 * doorbell). Loads nothing until asked. Control path; one JS thread.
 * @module
 */
import type { FabricDescriptor } from "../fabric_descriptor.ts";
import type { ShmCapabilities } from "./probe.ts";

/** The shm fabric's descriptor. */
export const shmFabric: FabricDescriptor<"shm", "shm", ShmCapabilities> = {
  kind: "shm",
  title: "shared memory (same host)",
  rank: 3,
  section: "shm",
  servedByDefault: true,
  load: () => import("./provider.ts"),
  async probe(ctx) {
    const { probeShm } = await import("./probe.ts");
    const report = await probeShm();
    // the futex doorbell needs the helper
    return { usable: report.usable && ctx.helperLoaded, libraries: {}, report };
  },
  doctor: (shm) => [
    `shm          ${
      shm.usable ? "usable (POSIX shm + mmap + Atomics)" : `not usable: ${shm.reason}`
    }`,
  ],
  testSettings: () => ({
    label: "shm",
    where: "host",
    host: "127.0.0.1",
    server: {},
    client: {},
  }),
};
