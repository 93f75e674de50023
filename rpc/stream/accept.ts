/**
 * The server side of a stream: a handler whose call carries `stream_settings` (a client that
 * opened a stream with it) accepts the stream with {@link acceptStream}; the call's answer then
 * carries this side's settings and goes out wrapped in a DATA frame to the client's stream, as
 * brpc answers such calls ({@link answerStreamCall}); writes made before the answer follow it.
 *
 * ```ts
 * serve({ services: { "example.EchoService": { Echo: (req, ctx) => {
 *   const stream = acceptStream(ctx);
 *   (async () => { for await (const m of stream) await stream.write(m); stream.close(); })();
 *   return answer;
 * } } } });
 * ```
 *
 * Threading: the server's JS thread.
 * @module
 */
import { encodeFrame } from "../protocol/frame.ts";
import type { CallContext, ServerCall } from "../protocol/dispatch.ts";
import type { RpcMeta } from "../protocol/rpc_meta.ts";
import {
  decodeStreamSettings,
  encodeStreamSettings,
  FRAME_DATA,
  INVALID_STREAM_ID,
  type StreamSettings,
} from "../protocol/stream_frame.ts";
import type { Stream } from "./stream.ts";
import { StreamError } from "./stream_error.ts";
import type { StreamOptions } from "./stream_options.ts";
import { StreamTable } from "./stream_table.ts";

const EMPTY = new Uint8Array(0);

/** The streams each call accepted (its first and extra streams), until its answer is sent. */
const accepted = new WeakMap<object, Stream[]>();

/**
 * The table of a sink that carries streams (a TCP server connection, or a fabric session's
 * stream pipe for the calls it carries), else undefined.
 */
function tableOf(ctx: CallContext): StreamTable | undefined {
  const sink = (ctx as Partial<ServerCall>).sink as { streams?: unknown } | undefined;
  return sink?.streams instanceof StreamTable ? sink.streams : undefined;
}

/** Whether the call's client asked for a stream (its meta carries `stream_settings`). */
export function callHasStream(ctx: CallContext): boolean {
  return (ctx as Partial<ServerCall>).meta?.streamSettings !== undefined;
}

/**
 * Accepts the stream the client opened with this call (call it before the handler returns).
 * Throws {@link StreamError} kind "refused" when the call carries no stream, several (a brpc
 * client's `StreamCreate(streams, n, …)`: accept them with {@link acceptStreams}), arrived on a
 * path without streams (a fabric session's call slots), or accepted one already; VerbusError INVALID_OPTIONS
 * for bad options.
 */
export function acceptStream(ctx: CallContext, options?: StreamOptions): Stream {
  const all = accept(ctx, options, false);
  return all[0];
}

/**
 * Accepts every stream the client opened with this call, in its order: the first and its
 * `extra_stream_ids` (brpc's batch `StreamAccept(streams, …)`); the answer names this side's in
 * the same order. Throws as {@link acceptStream} does (one stream is a batch of one).
 */
export function acceptStreams(ctx: CallContext, options?: StreamOptions): Stream[] {
  return accept(ctx, options, true);
}

function accept(ctx: CallContext, options: StreamOptions | undefined, batch: boolean): Stream[] {
  const where = `${ctx.service}.${ctx.method}`;
  const raw = (ctx as Partial<ServerCall>).meta?.streamSettings;
  if (raw === undefined) throw new StreamError("refused", `${where}: the call opened no stream`);
  const table = tableOf(ctx);
  if (table === undefined) {
    throw new StreamError(
      "refused",
      `${where}: streams open on a TCP connection or a fabric session's stream pipe only`,
    );
  }
  if (accepted.has(ctx)) {
    throw new StreamError("refused", `${where}: the stream was accepted already`);
  }
  let remote: StreamSettings;
  try {
    remote = decodeStreamSettings(raw);
  } catch (e) {
    throw new StreamError("refused", `${where}: ${(e as Error).message}`, e);
  }
  const extra = remote.extraStreamIds;
  if (!batch && extra.length > 0) {
    const n = extra.length + 1;
    throw new StreamError("refused", `${where}: the client opened ${n} streams (acceptStreams)`);
  }
  const all = [table.create(options, { ...remote, extraStreamIds: [] })];
  try {
    for (const id of extra) {
      all.push(table.create(options, { ...remote, streamId: id, extraStreamIds: [] }));
    }
  } catch (e) {
    for (const s of all) s._fail(e as StreamError);
    throw e;
  }
  accepted.set(ctx, all);
  return all;
}

/**
 * Sends the answer of a call whose request carried `stream_settings`: wrapped in a DATA frame
 * to the client's stream (with this side's settings when a stream was accepted and the call
 * succeeded), then connects the accepted stream (its held writes follow). A call that failed
 * fails its accepted stream. Returns false when the request's settings are undecodable (the
 * caller then answers plainly).
 */
export function answerStreamCall(
  table: StreamTable,
  call: ServerCall,
  response: Uint8Array,
  errorCode: number,
  errorText: string,
): boolean {
  let remote: StreamSettings;
  try {
    remote = decodeStreamSettings(call.meta.streamSettings!);
  } catch {
    return false;
  }
  const all = accepted.get(call);
  accepted.delete(call);
  const s = all?.[0];
  const ok = errorCode === 0;
  const meta: RpcMeta = { correlationId: call.correlationId };
  if (!ok) meta.response = { errorCode, errorText };
  // Response headers, trailers and error details travel as on a plain answer.
  meta.userFields = call.responseUserFields;
  meta.trailers = call.responseTrailers;
  if (!ok) meta.errorDetails = call.errorDetails;
  if (ok && s !== undefined) {
    const extraStreamIds = all!.slice(1).map((x) => x.id);
    meta.streamSettings = encodeStreamSettings({ ...s.settings(), extraStreamIds });
  }
  const frame = encodeFrame(meta, ok ? response : EMPTY, ok ? call.responseAttachment : EMPTY);
  const wrapper = {
    streamId: remote.streamId,
    sourceStreamId: s?.id ?? INVALID_STREAM_ID,
    frameType: FRAME_DATA,
    hasContinuation: false,
  };
  table.sendFrame(wrapper, frame);
  for (const x of all ?? []) {
    if (ok) x._connect(x.remoteSettings!);
    else x._fail(new StreamError("refused", `${call.service}.${call.method} failed: ${errorText}`));
  }
  return true;
}
