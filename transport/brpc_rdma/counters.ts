/**
 * {@link BrpcRdmaCounters}: what one brpc RDMA connection counts (tests, stats, the copies its
 * data path makes). Plain numbers, one object per connection; one JS thread.
 * @module
 */

/** Counters of one connection (tests, stats). Read-only for callers. */
export interface BrpcRdmaCounters {
  /** Data SEND_WITH_IMMs posted. */
  dataSends: number;
  /** Standalone zero-length ACKs posted. */
  acks: number;
  /** Largest data send, in bytes (never above the peer's block size). */
  maxSend: number;
  /** Data receives. */
  receives: number;
  /** Credits the peer returned in immediates. */
  creditsIn: number;
  /** Credits this side returned (in data sends and ACKs). */
  creditsOut: number;
  /** Times sending stopped because a window was empty. */
  windowStalls: number;
  /** Times sending stopped because the send ring had no room for a copy. */
  ringStalls: number;
  /**
   * Bytes posted from where they lay in the send ring: encoded there (no copy), or copied there
   * by a small `write` (counted in {@link copiedOnSend} too).
   */
  sentInPlace: number;
  /**
   * Bytes copied on their way out: by a small `write` into the output slab, and into the send
   * ring as they left when they were queued outside it (a big write, output while it was full).
   */
  copiedOnSend: number;
  /** Bytes received and lent to the data handler (no copy by the connection). */
  receivedLent: number;
  /** Bytes the connection copied out of receive blocks (held while paused, a handler that does
   * not take lent chunks, no handler yet). */
  copiedOnReceive: number;
}

/** A zeroed counters object. */
export function newCounters(): BrpcRdmaCounters {
  return {
    dataSends: 0,
    acks: 0,
    maxSend: 0,
    receives: 0,
    creditsIn: 0,
    creditsOut: 0,
    windowStalls: 0,
    ringStalls: 0,
    sentInPlace: 0,
    copiedOnSend: 0,
    receivedLent: 0,
    copiedOnReceive: 0,
  };
}
