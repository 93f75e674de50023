/**
 * What this host offers the URMA fabric, for `verbus doctor`: liburma through the URMA loader
 * (ABI checked; the simulator only when named explicitly) and the devices it lists. The URMA
 * modules are imported only when probing. Control path only; never throws.
 * @module
 */
import { existsSync } from "node:fs";
import type { LoadAttempt } from "../../errors.ts";
import type { LibraryStatus } from "../library_status.ts";

/** URMA devices of this host (labelled with the ABI, and "simulated" for the simulator). */
export interface UrmaCapabilities {
  devices: string[];
  simulated: boolean;
  /** The named UMDK ABI in use and the evidence that chose it (absent when liburma did not load). */
  abi?: { name: string; evidence: string };
  reason?: string;
}

/** Everything the URMA fabric reports about this host. */
export interface UrmaProbe {
  liburma: LibraryStatus;
  urma: UrmaCapabilities;
  /** True when liburma lists a device or is the simulator: URMA can run here. */
  usable: boolean;
}

/**
 * Probes liburma and its devices. `urmaPath` names a liburma explicitly (the simulator is used
 * only this way, or through VERBUS_LIBURMA). Never throws.
 */
export async function probeUrma(urmaPath?: string): Promise<UrmaProbe> {
  let u;
  try {
    const { loadUrma } = await import("./urma_lib.ts");
    u = await loadUrma(urmaPath);
  } catch (e) {
    const err = e as Error & { attempts?: LoadAttempt[] };
    const tried = err.attempts ? [...err.attempts] : [];
    const reason = tried.length
      ? `no liburma found: tried ${tried.map((t) => t.path).join(", ")}`
      : err.message.split("\n")[0];
    return {
      liburma: { found: false, tried, error: err.message },
      urma: { devices: [], simulated: false, reason },
      usable: false,
    };
  }
  const liburma: LibraryStatus = {
    found: true,
    path: u.path,
    source: u.lib.source,
    tried: [...u.lib.attempts],
  };
  const { listUrmaDevices } = await import("./context.ts");
  let devices: string[] = [];
  let reason: string | undefined;
  try {
    devices = listUrmaDevices(u);
    if (devices.length === 0) reason = "liburma loaded but it lists no devices";
  } catch (e) {
    reason = (e as Error).message;
  }
  if (!u.simulated && !existsSync("/dev/uburma")) {
    reason = "liburma found but /dev/uburma is missing (no UB driver)";
  }
  const label = (d: string) =>
    u.simulated ? `${d} (simulated, ABI ${u.version})` : `${d} (ABI ${u.version})`;
  return {
    liburma,
    urma: {
      devices: devices.map(label),
      simulated: u.simulated,
      abi: { name: u.abi, evidence: u.abiEvidence },
      ...(reason ? { reason } : {}),
    },
    usable: devices.length > 0 || u.simulated,
  };
}
