/**
 * The base of every native handle, after pyverbs' model: a private pointer, `close()` safe
 * twice, `[Symbol.dispose]`, parents that close their children first, and a FinalizationRegistry
 * that frees a forgotten handle only as a safety net (its errors are swallowed: an explicit
 * `close()` is the only path that reports failures).
 *
 * A parent holds its children weakly (a `WeakRef` each), so a child its owner forgot can be
 * collected, and freed by the safety net, while its parent lives; a child holds its parents
 * strongly, and so does its safety-net record until it has run, so a parent is never freed
 * before a child of it (the native library refuses, or worse, to free a PD with live MRs).
 * @module
 */
import { ClosedError } from "../errors.ts";
import type { NonNullPtr } from "./types.ts";

/** What the safety net needs to free a collected handle and leave its parents. */
interface Held {
  ptr: NonNullPtr;
  destroy: (ptr: NonNullPtr) => void;
  /** The collected handle's entry in each parent's children. */
  ref: WeakRef<NativeHandle>;
  parents: NativeHandle[];
}

/** A native object with an owner-managed lifetime. Subclasses supply the C destroy call. */
export abstract class NativeHandle {
  /** Frees what was collected unclosed (children before parents: see the module note). */
  static readonly #registry = new FinalizationRegistry<Held>((held) => {
    for (const p of held.parents) p.#children.delete(held.ref);
    try {
      held.destroy(held.ptr);
    } catch { /* safety net only */ }
  });

  #ptr: NonNullPtr | null;
  /** Open children, oldest first, each held weakly. */
  #children = new Set<WeakRef<NativeHandle>>();
  /** This handle's entry in its parents' children. */
  readonly #ref: WeakRef<NativeHandle> = new WeakRef(this);
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
    for (const p of this.#parents) p.#children.add(this.#ref);
    NativeHandle.#registry.register(
      this,
      { ptr, destroy, ref: this.#ref, parents: this.#parents },
      this,
    );
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
    for (const ref of this.#children) if (ref.deref() !== undefined) n++;
    return n;
  }

  /** Closes every child (newest first), then this handle. Safe twice. Throws the destroy error. */
  close(): void {
    if (this.#ptr === null) return;
    const children = [...this.#children].reverse();
    let first: unknown = undefined;
    for (const ref of children) {
      try {
        ref.deref()?.close();
      } catch (e) {
        first ??= e;
      }
    }
    this.#children.clear();
    const ptr = this.#ptr;
    this.#ptr = null;
    NativeHandle.#registry.unregister(this);
    for (const p of this.#parents) p.#children.delete(this.#ref);
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
