/**
 * A URMA context (`urma_context_t`) on one device and EID: the parent of JFCEs, JFCs, JFRs,
 * JFSs, jetties, imported jetties and segments. Closing it closes every child first.
 * Control path (allocates, throws); a context and its children belong to the JS thread that
 * opened it.
 * @module
 */
import { NativeHandle } from "../../ffi/handle.ts";
import {
  URMA_DEVICE_ATTR_BUFFER,
  URMA_DEVICE_ATTR_LEAD,
  URMA_DEVICE_LEAD,
  URMA_EID_INFO,
} from "../../ffi/layouts/urma.ts";
import { cstringArg } from "../../ffi/strings.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { UrmaStatusError } from "./errors.ts";
import { Jfc, Jfce } from "./jfc.ts";
import {
  Jetty,
  type JettyOptions,
  Jfr,
  type JfrOptions,
  Jfs,
  type JfsOptions,
  type RemoteJetty,
  TargetJetty,
} from "./jetty.ts";
import { ImportedSegment, type RegisterOptions, Segment } from "./segment.ts";
import { checkPtr, checkStatus, type UrmaLib } from "./urma_lib.ts";

/** What `urma_query_device` says, in the fields verbus uses. */
export interface UrmaDeviceAttr {
  maxJfc: number;
  maxJfs: number;
  maxJfr: number;
  maxJetty: number;
  maxJfcDepth: number;
  maxJfsDepth: number;
  maxJfrDepth: number;
  maxInline: number;
  maxSge: number;
  maxRsge: number;
  maxRecvSge: number;
  maxMsgSize: bigint;
}

/** Names of the URMA devices liburma sees (`urma_get_device_list`). */
export function listUrmaDevices(u: UrmaLib): string[] {
  const n = new Int32Array(1);
  const list = u.lib.symbols.urma_get_device_list(n);
  if (list === null) return [];
  try {
    const names: string[] = [];
    for (let i = 0; i < n[0]; i++) {
      const dev = u.ffi.readPtr(list, i * 8);
      if (dev !== null) names.push(u.ffi.cstring(dev, URMA_DEVICE_LEAD.name as number));
    }
    return names;
  } finally {
    u.lib.symbols.urma_free_device_list(list);
  }
}

/** An open URMA context. Call from the thread that opened it. */
export class UrmaContext extends NativeHandle {
  /** The 16 raw bytes of this context's EID. */
  readonly eid: Uint8Array;
  /** Run just before `urma_delete_context` (children already closed), in order, once each. */
  readonly #closing: (() => void)[] = [];

  private constructor(
    readonly lib: UrmaLib,
    ptr: NonNullPtr,
    readonly deviceName: string,
    readonly eidIndex: number,
    readonly device: NonNullPtr,
    eid: Uint8Array,
  ) {
    super(`urma_context ${deviceName}${lib.simulated ? " (simulated)" : ""}`, ptr, null, (p) => {
      checkStatus(lib, lib.lib.symbols.urma_delete_context(p), "urma_delete_context", deviceName);
    });
    this.eid = eid;
  }

  /**
   * Calls `fn` when this context closes, after its children and before `urma_delete_context`
   * (a waiter on the context's fds ends its wait there). `fn` must not throw.
   */
  whenClosing(fn: () => void): void {
    this.#closing.push(fn);
  }

  protected override beforeDestroy(): void {
    for (const fn of this.#closing.splice(0)) fn();
  }

  /** Opens `deviceName` (default: the first device) on EID `eidIndex`. */
  static open(u: UrmaLib, deviceName?: string, eidIndex = 0): UrmaContext {
    const name = deviceName ?? listUrmaDevices(u)[0];
    if (!name) {
      throw new UrmaStatusError("urma_get_device_list", 0, "no URMA device", u.lastError());
    }
    const dev = checkPtr(
      u,
      u.lib.symbols.urma_get_device_by_name(cstringArg(name)),
      "urma_get_device_by_name",
      name,
    );
    const cnt = new Uint32Array(1);
    const list = checkPtr(u, u.lib.symbols.urma_get_eid_list(dev, cnt), "urma_get_eid_list", name);
    let eid: Uint8Array;
    try {
      if (eidIndex >= cnt[0]) {
        throw new UrmaStatusError(
          "urma_get_eid_list",
          22,
          `${name} has ${cnt[0]} EIDs, no index ${eidIndex}`,
        );
      }
      const info = new Uint8Array(u.ffi.view(list, cnt[0] * URMA_EID_INFO.$size));
      eid = info.slice(
        eidIndex * URMA_EID_INFO.$size + URMA_EID_INFO.eid,
        eidIndex * URMA_EID_INFO.$size + 16,
      );
    } finally {
      u.lib.symbols.urma_free_eid_list?.(list);
    }
    const ctx = checkPtr(
      u,
      u.lib.symbols.urma_create_context(dev, eidIndex),
      "urma_create_context",
      `${name} eid ${eidIndex}`,
    );
    return new UrmaContext(u, ctx, name, eidIndex, dev, eid);
  }

  /** `urma_query_device`. */
  query(): UrmaDeviceAttr {
    const b = new Uint8Array(URMA_DEVICE_ATTR_BUFFER);
    checkStatus(
      this.lib,
      this.lib.lib.symbols.urma_query_device(this.device, b),
      "urma_query_device",
      this.deviceName,
    );
    const d = new DataView(b.buffer);
    const A = URMA_DEVICE_ATTR_LEAD as Record<string, number>;
    const u32 = (f: string) => d.getUint32(A[`dev_cap.${f}`], true);
    return {
      maxJfc: u32("max_jfc"),
      maxJfs: u32("max_jfs"),
      maxJfr: u32("max_jfr"),
      maxJetty: u32("max_jetty"),
      maxJfcDepth: u32("max_jfc_depth"),
      maxJfsDepth: u32("max_jfs_depth"),
      maxJfrDepth: u32("max_jfr_depth"),
      maxInline: u32("max_jfs_inline_len"),
      maxSge: u32("max_jfs_sge"),
      maxRsge: u32("max_jfs_rsge"),
      maxRecvSge: u32("max_jfr_sge"),
      maxMsgSize: d.getBigUint64(A["dev_cap.max_msg_size"], true),
    };
  }

  /** `urma_create_jfce`: a completion event channel with a pollable fd. */
  createJfce(): Jfce {
    return new Jfce(
      this,
      checkPtr(
        this.lib,
        this.lib.lib.symbols.urma_create_jfce(this.handle),
        "urma_create_jfce",
        this.deviceName,
      ),
    );
  }

  /** `urma_create_jfc` with `depth` records, optionally reporting events on `jfce`. */
  createJfc(depth: number, jfce: Jfce | null = null): Jfc {
    return Jfc.create(this, depth, jfce);
  }

  /** `urma_create_jfr`: a receive queue completing on `jfc`, guarded by `token`. */
  createJfr(jfc: Jfc, options: JfrOptions): Jfr {
    return Jfr.create(this, jfc, options);
  }

  /** `urma_create_jfs`: a send queue for the one-call `urma_write` / `urma_read` / `urma_send`. */
  createJfs(jfc: Jfc, options: JfsOptions = {}): Jfs {
    return Jfs.create(this, jfc, options);
  }

  /** `urma_create_jetty` (RM by default) sending with completions on `jfc`, receiving through `jfr`. */
  createJetty(jfc: Jfc, jfr: Jfr, options: JettyOptions = {}): Jetty {
    return Jetty.create(this, jfc, jfr, options);
  }

  /** `urma_import_jetty`: the peer's jetty (import its segments FIRST, as the real stack requires). */
  importJetty(remote: RemoteJetty, token: number, blob?: Uint8Array | null): TargetJetty {
    return TargetJetty.import(this, remote, token, blob ?? null);
  }

  /** `urma_register_seg` over `buffer` (kept referenced until the segment closes). */
  registerSegment(buffer: Uint8Array, options: RegisterOptions): Segment {
    return Segment.register(this, buffer, options);
  }

  /**
   * `urma_import_seg` of a peer's 48-byte fixed `urma_seg_t` with its token, or of its library
   * blob (transport/urma/description.ts, length already checked) when given.
   */
  importSegment(descriptor: Uint8Array, token: number, blob?: Uint8Array | null): ImportedSegment {
    return ImportedSegment.import(this, descriptor, token, blob ?? null);
  }
}

/** Formats a raw EID like `0000:0000:0000:0000:0000:ffff:7f00:0001`. */
export function formatEid(eid: Uint8Array): string {
  const parts: string[] = [];
  for (let i = 0; i < 16; i += 2) {
    parts.push(((eid[i] << 8) | eid[i + 1]).toString(16).padStart(4, "0"));
  }
  return parts.join(":");
}
