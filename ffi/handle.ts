/**
 * The base of every native handle, after pyverbs' model: a private pointer, `close()` safe
 * twice, `[Symbol.dispose]`, parents that close their children first, and a FinalizationRegistry
 * that frees a forgotten handle only as a safety net (its errors are swallowed: an explicit
 * `close()` is the only path that reports failures).
 * @module
 */
import { ClosedError } from "../errors.ts";
import type { NonNullPtr } from "./types.ts";

interface Held {
  kind: string;
  ptr: NonNullPtr;
  destroy: (ptr: NonNullPtr) => void;
}

const registry = new FinalizationRegistry<Held>((held) => {
  try {
    held.destroy(held.ptr);
  } catch { /* safety net only */ }
});

/** A native object with an owner-managed lifetime. Subclasses supply the C destroy call. */
export abstract class NativeHandle {
  #ptr: NonNullPtr | null;
  #children = new Set<NativeHandle>();
  #parents: NativeHandle[];
  /** What this is, for messages: "ibv_pd", "ibv_qp 0x12"... */
  readonly kind: string;

  /**
   * @param kind name used in errors
   * @param ptr the native pointer this handle owns
   * @param parent the handle(s) that must outlive this one (each closes this one first): a QP
   *   is a child of its PD and of its CQs, a CQ of its context and its completion channel
   * @param destroy the C destroy call; must not capture `this`
   */
  protected constructor(
    kind: string,
    ptr: NonNullPtr,
    parent: NativeHandle | readonly NativeHandle[] | null,
    private readonly destroy: (ptr: NonNullPtr) => void,
  ) {
    this.kind = kind;
    this.#ptr = ptr;
    this.#parents = parent === null
      ? []
      : Array.isArray(parent)
      ? [...new Set(parent)]
      : [parent as NativeHandle];
    for (const p of this.#parents) p.#children.add(this);
    registry.register(this, { kind, ptr, destroy }, this);
  }

  /** The native pointer. Throws {@link ClosedError} after close(). For this module tree only. */
  get handle(): NonNullPtr {
    if (this.#ptr === null) throw new ClosedError(this.kind);
    return this.#ptr;
  }

  /** True once close() has run. */
  get closed(): boolean {
    return this.#ptr === null;
  }

  /** Handles created from this one that are still open. */
  get openChildren(): number {
    return this.#children.size;
  }

  /** Closes every child (newest first), then this handle. Safe twice. Throws the destroy error. */
  close(): void {
    if (this.#ptr === null) return;
    const children = [...this.#children].reverse();
    let first: unknown = undefined;
    for (const c of children) {
      try {
        c.close();
      } catch (e) {
        first ??= e;
      }
    }
    const ptr = this.#ptr;
    this.#ptr = null;
    registry.unregister(this);
    for (const p of this.#parents) p.#children.delete(this);
    this.#parents = [];
    this.beforeDestroy();
    this.destroy(ptr);
    if (first !== undefined) throw first;
  }

  /** Hook for subclasses: drop references (buffers) before the native destroy. */
  protected beforeDestroy(): void {}

  [Symbol.dispose](): void {
    this.close();
  }
}
