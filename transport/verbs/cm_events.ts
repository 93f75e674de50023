/**
 * The process-wide rdma_cm event channel of the verbs fabric ({@link CmEventLoop}): its fd is
 * waited on off the JS thread ({@link WakeableFdWait}), so the event loop never blocks; once the
 * fd is readable `rdma_get_cm_event` returns at once. The wait is long ({@link CM_WAIT_MS}): the
 * last id leaving ends it, so the loop stops at once instead of at its next timeout (a 100 ms
 * wait woke every process with a verbs session ten times a second). Every event is copied (private data included) and acked before it is
 * dispatched to the handler of its CM id, so `rdma_destroy_id` never waits on an unacked event. A
 * connect request nobody listens for is rejected. Control path; one JS thread.
 * @module
 */
import {
  RDMA_CM_EVENT_LAYOUT,
  RDMA_CONN_PARAM,
  RDMA_EVENT_CHANNEL,
} from "../../ffi/layouts/rdmacm.ts";
import { RDMA_CM_EVENT, RDMA_PS_TCP } from "../../ffi/symbols/librdmacm.ts";
import type { NonNullPtr, Ptr } from "../../ffi/types.ts";
import { FD_READABLE, WakeableFdWait } from "../fd_wait.ts";
import { cmCheck, type CmLib } from "./cm_lib.ts";

/** A CM event, copied out of librdmacm's struct before the ack. */
export interface CmEvent {
  readonly type: number;
  /** "ESTABLISHED", "REJECTED", ... */
  readonly name: string;
  readonly status: number;
  readonly id: NonNullPtr;
  readonly listenId: Ptr;
  /** The connection private data (empty when the event carries none). */
  readonly data: Uint8Array;
}

/** CM event numbers by name. */
export const EV = Object.fromEntries(RDMA_CM_EVENT.map((n, i) => [n, i])) as Record<
  (typeof RDMA_CM_EVENT)[number],
  number
>;

/** Longest single wait of the loop, ms (the last id leaving wakes it sooner). */
export const CM_WAIT_MS = 10_000;
/** The wait when the loop has no eventfd (it then notices the last id leaving this late). */
const CM_WAIT_NO_WAKE_MS = 100;

/** The process-wide CM event channel and the loop that dispatches its events. */
export class CmEventLoop {
  static #instance: CmEventLoop | null = null;
  readonly channel: NonNullPtr;
  readonly fd: number;
  /** The loop's wait on the channel, which the last id leaving ends. */
  readonly #wait: WakeableFdWait;
  readonly #handlers = new Map<bigint, (ev: CmEvent) => void>();
  readonly #evOut = new BigUint64Array(1);
  #running = false;

  private constructor(readonly lib: CmLib) {
    const ch = lib.cm.symbols.rdma_create_event_channel();
    if (ch === null) cmCheck(lib, -1, "rdma_create_event_channel", "the CM event channel");
    this.channel = ch as NonNullPtr;
    this.fd = lib.ffi.readI32(this.channel, RDMA_EVENT_CHANNEL.fd);
    this.#wait = new WakeableFdWait(lib.helper, CM_WAIT_MS, CM_WAIT_NO_WAKE_MS);
  }

  /** The loop of this process (its channel is created on first use and lives as long). */
  static get(lib: CmLib): CmEventLoop {
    CmEventLoop.#instance ??= new CmEventLoop(lib);
    return CmEventLoop.#instance;
  }

  /** `rdma_create_id` on this channel (RC, port space TCP). */
  createId(what: string): NonNullPtr {
    const out = new BigUint64Array(1);
    cmCheck(
      this.lib,
      this.lib.cm.symbols.rdma_create_id(this.channel, out, null, RDMA_PS_TCP),
      "rdma_create_id",
      what,
    );
    return this.lib.ffi.fromAddress(out[0]) as NonNullPtr;
  }

  /** Routes the events of `id` to `handler` and keeps the loop running while any id is routed. */
  on(id: NonNullPtr, handler: (ev: CmEvent) => void): void {
    this.#handlers.set(this.lib.ffi.address(id), handler);
    if (!this.#running) void this.#run();
  }

  /** Stops routing the events of `id`; the last one leaving ends the loop's wait now. */
  off(id: NonNullPtr): void {
    if (!this.#handlers.delete(this.lib.ffi.address(id))) return;
    if (this.#handlers.size === 0 && this.#running) this.#wait.wake();
  }

  /** Ids routed right now (tests). */
  get routed(): number {
    return this.#handlers.size;
  }

  /** Waits the loop made (tests: an idle loop waits rarely). */
  get waits(): number {
    return this.#wait.waits;
  }

  /** True while the loop waits on the channel (tests). */
  get running(): boolean {
    return this.#running;
  }

  /** This process's loop, if one was made (tests). */
  static current(): CmEventLoop | null {
    return CmEventLoop.#instance;
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (this.#handlers.size > 0) {
        const rc = await this.#wait.wait(this.fd);
        if (rc < 0) {
          console.error(`verbus: poll on the rdma_cm event channel failed (errno ${-rc})`);
          await new Promise((r) => setTimeout(r, 100));
        } else if (rc === FD_READABLE) this.#drain(); // (woken: the loop condition decides)
      }
    } finally {
      this.#running = false;
    }
  }

  #drain(): void {
    const { cm, ffi, helper } = this.lib;
    for (let n = 0; n < 64 && helper.lib.symbols.vb_wait_fd(this.fd, 0) > 0; n++) {
      if (cm.symbols.rdma_get_cm_event(this.channel, this.#evOut) !== 0) return;
      const p = ffi.fromAddress(this.#evOut[0]) as NonNullPtr;
      const L = RDMA_CM_EVENT_LAYOUT, C = L["param.conn"];
      const type = ffi.readU32(p, L.event);
      const dataPtr = ffi.readPtr(p, C + RDMA_CONN_PARAM.private_data);
      const dataLen = ffi.readU8(p, C + RDMA_CONN_PARAM.private_data_len);
      const ev: CmEvent = {
        type,
        name: RDMA_CM_EVENT[type] ?? `event ${type}`,
        status: ffi.readI32(p, L.status),
        id: ffi.readPtr(p, L.id) as NonNullPtr,
        listenId: ffi.readPtr(p, L.listen_id),
        data: dataPtr !== null && dataLen > 0
          ? new Uint8Array(ffi.view(dataPtr, dataLen)).slice()
          : new Uint8Array(0),
      };
      cm.symbols.rdma_ack_cm_event(p);
      const key = type === EV.CONNECT_REQUEST && ev.listenId !== null ? ev.listenId : ev.id;
      const handler = this.#handlers.get(ffi.address(key));
      if (handler) {
        try {
          handler(ev);
        } catch (e) {
          console.error(`verbus: rdma_cm ${ev.name} handler failed: ${(e as Error).message}`);
        }
      } else if (type === EV.CONNECT_REQUEST) {
        cm.symbols.rdma_reject(ev.id, null, 0);
        cm.symbols.rdma_destroy_id(ev.id);
      }
    }
  }
}
