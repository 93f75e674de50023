/**
 * What this host offers the RDMA verbs fabric, for `verbus doctor`: libibverbs and librdmacm
 * (found or not, every path tried), each RDMA device with its ports, states, MTUs and GIDs, and
 * the QP settings verbus would use. Control path only; never throws (failures become reasons).
 * @module
 */
import { readFileSync } from "node:fs";
import { LIBRDMACM_SPEC } from "../../ffi/symbols/librdmacm.ts";
import { type LibraryStatus, notFoundStatus, probeLibraryStatus } from "../library_status.ts";
import { formatGid } from "./context.ts";
import { listDevices, openDevice } from "./device.ts";
import { DEFAULT_QP_TUNING, type QpTuning, VERBS_QP_CAPS } from "./qp.ts";
import { loadVerbs } from "./verbs_lib.ts";

/** One GID table entry. */
export interface GidInfo {
  index: number;
  gid: string;
  /** "RoCE v2", "IB/RoCE v1" (from sysfs), when known. */
  type?: string;
  /** The netdev the GID belongs to (from sysfs), when known. */
  netdev?: string;
}

/** One port of an RDMA device. */
export interface PortInfo {
  port: number;
  state: string;
  activeMtu: number;
  maxMtu: number;
  linkLayer: string;
  lid: number;
  gids: GidInfo[];
}

/** One RDMA device. */
export interface RdmaDeviceInfo {
  name: string;
  guid: string;
  fwVer?: string;
  maxQp?: number;
  maxMrSize?: string;
  ports: PortInfo[];
  error?: string;
}

/** The RDMA devices of this host (none: `reason` says why) and the QP settings in use. */
export interface RdmaCapabilities {
  devices: RdmaDeviceInfo[];
  reason?: string;
  qpSettings: QpTuning & typeof VERBS_QP_CAPS;
}

/** Everything the verbs fabric reports about this host. */
export interface VerbsProbe {
  libibverbs: LibraryStatus;
  librdmacm: LibraryStatus;
  rdma: RdmaCapabilities;
  /** True when a device has an ACTIVE port and librdmacm loads: verbs can run here. */
  usable: boolean;
}

/** GID table entries looked at per port. */
const MAX_GIDS = 64;

function readSysfs(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

function qpSettings(): RdmaCapabilities["qpSettings"] {
  return { ...DEFAULT_QP_TUNING, ...VERBS_QP_CAPS };
}

async function probeRdma(): Promise<{ lib: LibraryStatus; rdma: RdmaCapabilities }> {
  let v;
  try {
    v = await loadVerbs();
  } catch (e) {
    const lib = notFoundStatus(e);
    return { lib, rdma: { devices: [], reason: lib.error, qpSettings: qpSettings() } };
  }
  const lib: LibraryStatus = {
    found: true,
    path: v.verbs.path,
    source: v.verbs.source,
    tried: [...v.verbs.attempts],
  };
  let names;
  try {
    names = listDevices(v);
  } catch (e) {
    return { lib, rdma: { devices: [], reason: (e as Error).message, qpSettings: qpSettings() } };
  }
  if (names.length === 0) {
    return { lib, rdma: { devices: [], reason: "no RDMA devices", qpSettings: qpSettings() } };
  }
  const devices: RdmaDeviceInfo[] = [];
  for (const d of names) {
    const info: RdmaDeviceInfo = { name: d.name, guid: d.guid, ports: [] };
    try {
      using ctx = openDevice(v, d.name);
      const attr = ctx.query();
      info.fwVer = attr.fwVer;
      info.maxQp = attr.maxQp;
      info.maxMrSize = attr.maxMrSize.toString();
      for (let p = 1; p <= attr.physPortCnt; p++) {
        const pa = ctx.queryPort(p);
        const gids: GidInfo[] = [];
        for (let i = 0; i < Math.min(pa.gidTblLen, MAX_GIDS); i++) {
          let raw: Uint8Array;
          try {
            raw = ctx.queryGid(p, i);
          } catch {
            continue;
          }
          if (raw.every((b) => b === 0)) continue;
          const base = `/sys/class/infiniband/${d.name}/ports/${p}/gid_attrs`;
          gids.push({
            index: i,
            gid: formatGid(raw),
            type: readSysfs(`${base}/types/${i}`),
            netdev: readSysfs(`${base}/ndevs/${i}`),
          });
        }
        info.ports.push({
          port: p,
          state: pa.state,
          activeMtu: pa.activeMtu,
          maxMtu: pa.maxMtu,
          linkLayer: pa.linkLayer,
          lid: pa.lid,
          gids,
        });
      }
    } catch (e) {
      info.error = (e as Error).message;
    }
    devices.push(info);
  }
  return { lib, rdma: { devices, qpSettings: qpSettings() } };
}

/**
 * Probes libibverbs (only when the helper loaded: verbs is bound through it), the RDMA devices
 * and librdmacm. Never throws.
 */
export async function probeVerbs(helperLoaded: boolean): Promise<VerbsProbe> {
  const [{ lib: libibverbs, rdma }, librdmacm] = await Promise.all([
    helperLoaded ? probeRdma() : Promise.resolve({
      lib: {
        found: false,
        tried: [],
        error: "not probed: the helper did not load",
      } as LibraryStatus,
      rdma: { devices: [], reason: "the helper did not load", qpSettings: qpSettings() },
    }),
    probeLibraryStatus(LIBRDMACM_SPEC),
  ]);
  const activePort = rdma.devices.some((d) => d.ports.some((p) => p.state === "ACTIVE"));
  return { libibverbs, librdmacm, rdma, usable: activePort && librdmacm.found };
}
