/**
 * {@link StreamError}: how a stream ended other than by a clean close — the one error of
 * `rpc/stream/`, with a `kind` saying why.
 *
 * Threading: plain data; any thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";

/** Why a stream ended badly. */
export type StreamEndKind =
  /** Used after this side closed it, or after the peer closed it. */
  | "closed"
  /** The peer reset it (brpc's RST frame), or this side did (`reset()`). */
  | "reset"
  /** The call that opens it failed, or the server answered without accepting it. */
  | "refused"
  /** The peer sent more than the stream's bounds allow (unread bytes, message size). */
  | "overrun"
  /** The peer broke the stream protocol (a feedback claiming bytes never sent). */
  | "protocol"
  /** The connection under it ended. */
  | "connection";

/** A stream ended (code STREAM); `kind` says how, the message names the stream and the cause. */
export class StreamError extends VerbusError {
  /** How it ended. */
  readonly kind: StreamEndKind;

  constructor(kind: StreamEndKind, message: string, cause?: unknown) {
    super("STREAM", message, cause === undefined ? {} : { cause });
    this.kind = kind;
  }
}
