/**
 * Handlers that borrow their request: the mark {@link borrowsRequest} puts on a handler, read by
 * the dispatcher for the fabric sessions (which may then lend such a handler a reused buffer).
 * @module
 */
import type { Handler } from "./dispatch.ts";

const BORROWS: unique symbol = Symbol("verbus.borrowsRequest");
type Marked = Handler & { [BORROWS]?: true };

/**
 * Marks `handler` (and returns it) as one that reads its request only until it returns or its
 * promise settles, keeps no view of it (nor returns one as its response), and copies what it
 * keeps. A fabric session may then hand it the request in a buffer it reuses for later calls
 * instead of a fresh copy per call (bounded memory under sustained large requests).
 * Unmarked handlers own their request, as {@link Handler} says. Setup; any thread.
 */
export function borrowsRequest<H extends Handler>(handler: H): H {
  (handler as Marked)[BORROWS] = true;
  return handler;
}

/** True when `handler` was marked by {@link borrowsRequest}. */
export function borrowsItsRequest(handler: Handler | undefined): boolean {
  return (handler as Marked | undefined)?.[BORROWS] === true;
}
