/**
 * A long wait on an event fd (the rdma_cm channel, a URMA context's async fd) that its owner can
 * end early: {@link WakeableFdWait} owns an eventfd and waits with the helper's
 * `vb_wait_fd_or_wake` as a nonblocking call (Deno: nonblocking FFI; Bun: a Worker), so an event
 * loop that has nothing left to watch signals it and ends at once instead of at its next timeout.
 * A short timed wait each turn would cost a worker round trip per turn in every process that
 * holds such an fd (~1–3 % of a vCPU in the Soft-RoCE VM at 5–10 turns a second). Where no
 * eventfd can be made the waits are short, and an unwatch is noticed that late.
 *
 * Control path; one JS thread (the loop's).
 * @module
 */
import type { Helper } from "../ffi/helper.ts";

/** What {@link WakeableFdWait.wait} returns. */
export const FD_READABLE = 1, FD_WOKEN = 2, FD_TIMED_OUT = 0;

/** See the module documentation. */
export class WakeableFdWait {
  /** The eventfd that ends a wait (-1: none could be made, or closed). */
  #wakeFd: number;
  #waiting = false;
  #closer: ((fd: number) => void) | null = null;
  /** Waits made (tests: an idle loop waits rarely). */
  waits = 0;

  /**
   * @param helper the helper (its eventfd and wait calls)
   * @param longMs one wait's timeout while an eventfd can end it
   * @param shortMs one wait's timeout without an eventfd
   */
  constructor(
    private readonly helper: Helper,
    private readonly longMs: number,
    private readonly shortMs: number,
  ) {
    this.#wakeFd = helper.lib.symbols.vb_eventfd();
  }

  /**
   * Waits until `fd` is readable ({@link FD_READABLE}), {@link wake} was called
   * ({@link FD_WOKEN}), or the timeout passed ({@link FD_TIMED_OUT}); -errno on failure.
   */
  async wait(fd: number): Promise<number> {
    this.waits++;
    const nb = this.helper.lib.nonblocking;
    if (this.#wakeFd < 0) return await nb.vb_wait_fd(fd, this.shortMs);
    this.#waiting = true;
    try {
      return await nb.vb_wait_fd_or_wake(fd, this.#wakeFd, this.longMs);
    } finally {
      this.#waiting = false;
      if (this.#closer) this.#closeNow();
    }
  }

  /** Ends the wait in progress now (or the next one at once, if none is in progress). */
  wake(): void {
    if (this.#wakeFd >= 0) this.helper.lib.symbols.vb_eventfd_signal(this.#wakeFd);
  }

  /**
   * Ends the wait in progress and closes the eventfd with `close` (now, or once that wait
   * returned); later waits are short. Safe twice.
   */
  close(close: (fd: number) => void): void {
    if (this.#wakeFd < 0) return;
    this.#closer = close;
    if (this.#waiting) this.wake();
    else this.#closeNow();
  }

  #closeNow(): void {
    const fd = this.#wakeFd;
    this.#wakeFd = -1;
    if (fd >= 0) this.#closer?.(fd);
    this.#closer = null;
  }
}
