/**
 * The base of every native handle, after pyverbs' model: a private pointer, `close()` safe
 * twice, `[Symbol.dispose]`, parents that close their children first, and a FinalizationRegistry
 * that frees a forgotten handle only as a safety net (its errors are swallowed: an explicit
 * `close()` is the only path that reports failures).
 *
 * A parent holds its children's native records (pointer, destroy call, their own children), not
 * the handles themselves, so a child its owner forgot can be collected, and freed by the safety
 * net, while its parent lives. A handle collected but not yet finalized (the registry's callback
 * runs some tasks later) is still in its parents' records: a parent closed meanwhile frees it,
 * its children first, before itself, and the callback then finds it done. A child holds its
 * parents strongly, and so does its record, so a parent is never freed before a child of it (the
 * native library refuses, or worse, to free a PD with live MRs).
 * @module
 */
import { ClosedError } from "../errors.ts";
import type { NonNullPtr } from "./types.ts";

/** A handle's native side: what frees it, whether or not the handle object is still there. */
interface Held {
  ptr: NonNullPtr;
  destroy: (ptr: NonNullPtr) => void;
  /** The handle, while it is not collected. */
  ref: WeakRef<NativeHandle>;
  /** Handles that must outlive this one (held strongly until it is freed: see the module note). */
  parents: readonly NativeHandle[];
  /** Records of the open children, oldest first. */
  children: Set<Held>;
  /** Freed (closed, or freed for a collected handle): never again. */
  done: boolean;
}

/** A native object with an owner-managed lifetime. Subclasses supply the C destroy call. */
export abstract class NativeHandle {
  /** Frees what was collected unclosed (children before parents: see the module note). */
  static readonly #registry = new FinalizationRegistry<Held>((held) =>
    void NativeHandle.#free(held)
  );

  /**
   * Frees a collected handle's native object, its children's first (newest first), and takes it
   * out of its parents' records. Returns the first destroy error (the safety net drops it; a
   * parent's close reports it).
   */
  static #free(held: Held): unknown {
    if (held.done) return undefined;
    held.done = true;
    let first: unknown = undefined;
    for (const c of [...held.children].reverse()) first ??= NativeHandle.#free(c);
    held.children.clear();
    for (const p of held.parents) p.#held.children.delete(held);
    held.parents = [];
    try {
      held.destroy(held.ptr);
    } catch (e) {
      first ??= e;
    }
    return first;
  }

  #ptr: NonNullPtr | null;
  /** This handle's native record (also in each parent's children and in the registry). */
  readonly #held: Held;
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
    const parents = parent === null
      ? []
      : Array.isArray(parent)
      ? [...new Set(parent)]
      : [parent as NativeHandle];
    this.#held = {
      ptr,
      destroy,
      ref: new WeakRef(this),
      parents,
      children: new Set(),
      done: false,
    };
    for (const p of parents) p.#held.children.add(this.#held);
    NativeHandle.#registry.register(this, this.#held, this);
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

  /**
   * Handles created from this one that are still open and still referenced (a forgotten child
   * leaves the count once it is collected, as its safety net frees it).
   */
  get openChildren(): number {
    let n = 0;
    for (const c of this.#held.children) if (c.ref.deref() !== undefined) n++;
    return n;
  }

  /**
   * Closes every child (newest first; one already collected but not yet finalized is freed here),
   * then this handle. Safe twice. Throws the first destroy error.
   */
  close(): void {
    if (this.#ptr === null) return;
    const held = this.#held;
    let first: unknown = undefined;
    for (const c of [...held.children].reverse()) {
      try {
        const child = c.ref.deref();
        if (child !== undefined) child.close();
        else first ??= NativeHandle.#free(c);
      } catch (e) {
        first ??= e;
      }
    }
    held.children.clear();
    const ptr = this.#ptr;
    this.#ptr = null;
    held.done = true;
    NativeHandle.#registry.unregister(this);
    for (const p of held.parents) p.#held.children.delete(held);
    held.parents = [];
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
