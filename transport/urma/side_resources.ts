/**
 * What one URMA session side holds in the process's hub, and how it gives it back: its binding
 * (token and completion sink), the peer's segment and jetty it imported (and any import a fault
 * added), its region segment (unregistered: never reused, its token is known to the peer), its
 * aux area (back to the pool's cache: local-only, no peer can reach it) and its jetty (deleted).
 * Control path; one JS thread.
 * @module
 */
import type { NativeHandle } from "../../ffi/handle.ts";
import type { UrmaHub } from "./hub.ts";
import type { HubBinding } from "./hub_binding.ts";
import type { PreparedJetty } from "./jetty_pool.ts";
import type { Segment } from "./segment.ts";

/** The hub objects of one side. */
export class SideResources {
  /** Imports of this side (peer segment, peer jetty, fault imports), closed newest first. */
  readonly #owned: NativeHandle[] = [];
  #released = false;

  constructor(
    readonly hub: UrmaHub,
    readonly prepared: PreparedJetty,
    readonly binding: HubBinding,
    readonly regionSeg: Segment,
    readonly auxSeg: Segment,
  ) {}

  /** Takes `handle` into this side (closed on release); returns it. */
  own<T extends NativeHandle>(handle: T): T {
    this.#owned.push(handle);
    return handle;
  }

  /** True once released. */
  get released(): boolean {
    return this.#released;
  }

  /** Gives everything back. Safe twice; the first failing delete is thrown after the rest. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const hub = this.hub;
    hub.unbind(this.binding);
    let first: unknown = undefined;
    const attempt = (f: () => void) => {
      try {
        f();
      } catch (e) {
        first ??= e;
      }
    };
    for (const h of this.#owned.splice(0).reverse()) attempt(() => h.close());
    attempt(() => hub.pool.retire(this.prepared)); // before its segments: nothing targets them then
    attempt(() => this.regionSeg.close());
    attempt(() => hub.pool.returnAux(this.auxSeg));
    if (first !== undefined) throw first;
  }
}
