/**
 * Streaming calls their caller dropped unfinished. connect-es gives the caller of a server-
 * streaming or bidi method an iterable whose iterator has no `return()` (its `createClient`
 * wrapper and `runStreamingCall` both leave it out on purpose), so `for await (…) { break }`
 * over it tells the transport nothing, and the call's signal stays as it was: the transport
 * contract has no "the caller stopped reading". What is left is the collector: the response
 * iterable `stream_call.ts` makes is watched here, and once the caller let go of it unfinished
 * (it became garbage), `onDrop` resets the stream — the server's implementation sees its
 * signal aborted (Canceled) and its generator returned, and the stream's place on the
 * connection or fabric session is freed. A call that ends by itself (END, error, cancel)
 * unwatches first.
 *
 * When that happens is the collector's choice (the next major collection that finds it; a busy
 * process runs one often, an idle one may not for a while). Until then the server is held back
 * by the stream's window, as with any reader that stopped: a caller who wants the server
 * stopped at once aborts the call's signal (connect-es's documented cancel) before leaving.
 *
 * Threading: the JS thread of the transport; `onDrop` runs there, as a task of its own.
 * @module
 */

/** What to do when a watched iterable was dropped. Must not reference the iterable. */
type OnDrop = () => void;

const dropped = new FinalizationRegistry<OnDrop>((onDrop) => {
  abandonStats.watched--;
  abandonStats.dropped++;
  try {
    onDrop();
  } catch {
    // a finalizer has no one to tell
  }
});

/** Counters (tests): iterables watched now, and those dropped unfinished so far. */
export const abandonStats = { watched: 0, dropped: 0 };

/**
 * Watches `iterable` (the caller's): when it is collected before {@link unwatchAbandoned} with
 * the same `token`, `onDrop` runs. `onDrop` must not reach `iterable` (it would never be
 * collected).
 */
export function watchAbandoned(iterable: object, token: object, onDrop: OnDrop): void {
  abandonStats.watched++;
  dropped.register(iterable, onDrop, token);
}

/** The call ended by itself: its iterable is no longer watched. */
export function unwatchAbandoned(token: object): void {
  if (dropped.unregister(token)) abandonStats.watched--;
}
