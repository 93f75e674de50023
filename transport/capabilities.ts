/**
 * What this host can do: the helper, each native library (found or not, with every path
 * tried), RDMA devices with ports and GIDs, URMA, shared memory — and therefore which fabrics
 * are usable. `verbus doctor` prints this; the path selector reads `fabrics`. Never throws:
 * every failure becomes a reason string.
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import type { LoadAttempt } from "../errors.ts";
import { ffi } from "../ffi/ffi.ts";
import { probeHelper } from "../ffi/helper.ts";
import { errno, loadLibc } from "../ffi/libc.ts";
import { probeLibrary } from "../ffi/loader.ts";
import { RUNTIME, runtimeVersion } from "../ffi/runtime.ts";
import { cstringArg } from "../ffi/strings.ts";
import { MAP_SHARED, O_CREAT, O_EXCL, O_RDWR, PROT_READ, PROT_WRITE } from "../ffi/symbols/libc.ts";
import { LIBRDMACM_SPEC } from "../ffi/symbols/librdmacm.ts";
import { errnoName } from "../errors.ts";
import { formatGid } from "./verbs/context.ts";
import { listDevices, openDevice } from "./verbs/device.ts";
import { DEFAULT_QP_TUNING, type QpTuning, VERBS_QP_CAPS } from "./verbs/qp.ts";
import { loadVerbs } from "./verbs/verbs_lib.ts";

/** A native library's status. */
export interface LibraryStatus {
  found: boolean;
  path?: string;
  source?: LoadAttempt["source"];
  /** Every attempt that failed (all of them when not found). */
  tried: LoadAttempt[];
  error?: string;
}

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

/** The fabrics verbus knows. */
export type FabricName = "verbs" | "urma" | "shm" | "tcp";

/** Everything doctor reports. */
export interface HostCapabilities {
  runtime: { name: string; version: string };
  helper: LibraryStatus & { version?: string; layoutOk: boolean; layoutEntries?: number };
  libraries: { libibverbs: LibraryStatus; librdmacm: LibraryStatus; liburma: LibraryStatus };
  rdma: { devices: RdmaDeviceInfo[]; reason?: string; qpSettings: QpTuning & typeof VERBS_QP_CAPS };
  urma: { devices: string[]; simulated: boolean; reason?: string };
  shm: { usable: boolean; reason?: string };
  /** Fabrics this host can use, best first; TCP is always there. */
  fabrics: FabricName[];
}

function readSysfs(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

async function probeRdma(): Promise<{ lib: LibraryStatus; rdma: HostCapabilities["rdma"] }> {
  const qpSettings = { ...DEFAULT_QP_TUNING, ...VERBS_QP_CAPS };
  let v;
  try {
    v = await loadVerbs();
  } catch (e) {
    const err = e as Error & { attempts?: LoadAttempt[] };
    return {
      lib: { found: false, tried: err.attempts ? [...err.attempts] : [], error: err.message },
      rdma: { devices: [], reason: err.message, qpSettings },
    };
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
    return { lib, rdma: { devices: [], reason: (e as Error).message, qpSettings } };
  }
  if (names.length === 0) {
    return { lib, rdma: { devices: [], reason: "no RDMA devices", qpSettings } };
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
        for (let i = 0; i < Math.min(pa.gidTblLen, 64); i++) {
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
  return { lib, rdma: { devices, qpSettings } };
}

async function probeStatus(spec: Parameters<typeof probeLibrary>[0]): Promise<LibraryStatus> {
  const r = await probeLibrary(spec);
  if (!r.ok) return { found: false, tried: [...r.error.attempts], error: r.error.message };
  const st: LibraryStatus = {
    found: true,
    path: r.library.path,
    source: r.library.source,
    tried: [...r.library.attempts],
  };
  r.library.close();
  return st;
}

async function probeShm(): Promise<HostCapabilities["shm"]> {
  try {
    const f = await ffi();
    const libc = await loadLibc();
    const s = libc.symbols;
    const name = cstringArg(`/verbus-doctor-${s.getpid()}-${Date.now()}`);
    const fd = s.shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600);
    if (fd < 0) return { usable: false, reason: `shm_open failed with ${errnoName(errno(libc))}` };
    try {
      if (s.ftruncate(fd, 4096) !== 0) {
        return { usable: false, reason: `ftruncate failed with ${errnoName(errno(libc))}` };
      }
      const p = s.mmap(null, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p === null || f.address(p) === 0xffffffffffffffffn) {
        return { usable: false, reason: `mmap failed with ${errnoName(errno(libc))}` };
      }
      const u32 = new Uint32Array(f.view(p, 4096));
      Atomics.store(u32, 0, 0x5eed);
      const ok = Atomics.load(u32, 0) === 0x5eed;
      s.munmap(p, 4096);
      return ok ? { usable: true } : { usable: false, reason: "mapped memory did not read back" };
    } finally {
      s.close(fd);
      s.shm_unlink(name);
    }
  } catch (e) {
    return { usable: false, reason: (e as Error).message };
  }
}

/** liburma through the URMA loader (ABI checked; the simulator only when named explicitly). */
async function probeUrma(
  urmaPath?: string,
): Promise<{ lib: LibraryStatus; urma: HostCapabilities["urma"] }> {
  let u;
  try {
    const { loadUrma } = await import("./urma/urma_lib.ts");
    u = await loadUrma(urmaPath);
  } catch (e) {
    const err = e as Error & { attempts?: LoadAttempt[] };
    const tried = err.attempts ? [...err.attempts] : [];
    const reason = tried.length
      ? `no liburma found: tried ${tried.map((t) => t.path).join(", ")}`
      : err.message.split("\n")[0];
    return {
      lib: { found: false, tried, error: err.message },
      urma: { devices: [], simulated: false, reason },
    };
  }
  const lib: LibraryStatus = {
    found: true,
    path: u.path,
    source: u.lib.source,
    tried: [...u.lib.attempts],
  };
  const { listUrmaDevices } = await import("./urma/context.ts");
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
    lib,
    urma: { devices: devices.map(label), simulated: u.simulated, ...(reason ? { reason } : {}) },
  };
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
  const [{ lib: libibverbs, rdma }, librdmacm, { lib: liburma, urma }, shm] = await Promise.all([
    h.ok ? probeRdma() : Promise.resolve({
      lib: {
        found: false,
        tried: [],
        error: "not probed: the helper did not load",
      } as LibraryStatus,
      rdma: {
        devices: [],
        reason: "the helper did not load",
        qpSettings: { ...DEFAULT_QP_TUNING, ...VERBS_QP_CAPS },
      },
    }),
    probeStatus(LIBRDMACM_SPEC),
    probeUrma(urmaPath),
    probeShm(),
  ]);
  const fabrics: FabricName[] = [];
  const activeRdma = rdma.devices.some((d) => d.ports.some((p) => p.state === "ACTIVE"));
  if (activeRdma && librdmacm.found) fabrics.push("verbs");
  if (urma.devices.length > 0 || urma.simulated) fabrics.push("urma");
  if (shm.usable && h.ok) fabrics.push("shm");
  fabrics.push("tcp");
  return {
    runtime: { name: RUNTIME, version: runtimeVersion() },
    helper,
    libraries: { libibverbs, librdmacm, liburma },
    rdma,
    urma,
    shm,
    fabrics,
  };
}
