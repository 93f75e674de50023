/**
 * The client side of a stream: {@link openStream} makes an ordinary call whose `RpcMeta` carries
 * this side's `stream_settings`; the server accepts the stream in its handler, and its answer
 * (wrapped in a DATA frame to this stream, as brpc sends it) carries the server's settings. The
 * call's answer and the connected stream come back together. Works against a verbus server and
 * a stock brpc server (`brpc::StreamAccept`).
 *
 * ```ts
 * const { stream, response } = await openStream(client, "example.EchoService", "Echo", req);
 * await stream.write(bytes);
 * for await (const m of stream) console.log(m);
 * ```
 *
 * Threading: the JS thread of the channel.
 * @module
 */
import type { CallOptions } from "../tcp/channel_call.ts";
import type { Channel } from "../tcp/channel.ts";
import { VerbusError } from "../../errors.ts";
import { FrameParser } from "../protocol/frame_parser.ts";
import type { RpcMeta } from "../protocol/rpc_meta.ts";
import { decodeStreamSettings, encodeStreamSettings } from "../protocol/stream_frame.ts";
import type { Stream } from "./stream.ts";
import { StreamError } from "./stream_error.ts";
import type { StreamOptions } from "./stream_options.ts";
import type { StreamTable } from "./stream_table.ts";
import type { FabricStreams } from "./stream_ring.ts";

/** Options of {@link openStream}: the opening call's, and the stream's under `stream`. */
export interface OpenStreamOptions extends Omit<CallOptions, "streamSettings"> {
  /** The stream's window and bounds. */
  stream?: StreamOptions;
}

/** What {@link openStream} resolves with. The arrays are the caller's. */
export interface OpenedStream {
  /** The connected stream. */
  stream: Stream;
  /** The opening call's answer. */
  response: Uint8Array;
  attachment: Uint8Array;
  /** The answer's `user_fields` (response headers), when it carried any. */
  userFields?: ReadonlyMap<string, string>;
  /** The answer's trailers, when it carried any. */
  trailers?: ReadonlyMap<string, string>;
}

/**
 * Anything that has a baidu_std channel: a `Channel`, or a direct `Client` (`client.channel`),
 * whose live fabric session carries the stream when it has one.
 */
export type StreamVia = Channel | {
  readonly channel: Channel;
  _fabricStreams?(): FabricStreams | null;
  /** The client's default call timeout (an opening call on its fabric session waits that). */
  readonly _timeoutMs?: number;
};

function channelOf(via: StreamVia): Channel {
  return "channel" in via ? via.channel : via;
}

/**
 * Opens a stream with a call of `service.method` carrying `request`. Through a `Client` whose
 * fabric session is live the stream — and its opening call — ride that session
 * (`stream.carrier`: "shm", "verbs", "urma"); otherwise the TCP connection. Rejects with the
 * call's error (`RpcError`, `TimeoutError`, `ConnectionClosedError` when the session ended
 * first, …) or with {@link StreamError} kind "refused" when the server answered without
 * accepting a stream.
 */
export async function openStream(
  via: StreamVia,
  service: string,
  method: string,
  request: Uint8Array,
  options: OpenStreamOptions = {},
): Promise<OpenedStream> {
  const { streams, ...rest } = await openStreams(via, service, method, request, 1, options);
  return { stream: streams[0], ...rest };
}

/** What {@link openStreams} resolves with: the streams in the order opened. */
export type OpenedStreams = Omit<OpenedStream, "stream"> & { streams: Stream[] };

/**
 * Opens `count` streams with one call (brpc's batch `StreamCreate(streams, count, …)`: the first
 * in `stream_id`, the others in `extra_stream_ids`); the server accepts them all
 * (`acceptStreams`, brpc's batch `StreamAccept`) and they pair up in order. Rejects as
 * {@link openStream}; a stream the server did not pair fails with kind "refused".
 */
export async function openStreams(
  via: StreamVia,
  service: string,
  method: string,
  request: Uint8Array,
  count: number,
  options: OpenStreamOptions = {},
): Promise<OpenedStreams> {
  if (!Number.isInteger(count) || count < 1 || count > 1024) {
    throw new VerbusError("INVALID_ARGUMENT", `openStreams: count must be 1..1024, got ${count}`);
  }
  const channel = channelOf(via);
  // A client with a live fabric session carries the stream on it, and the opening call too
  // (`pipe_calls.ts`): the server accepts the stream on the same session.
  const fabric = "_fabricStreams" in via && via._fabricStreams ? via._fabricStreams() : null;
  const table = fabric?.table ?? await channel._streams();
  const { stream: streamOptions, ...opts } = options;
  const streams: Stream[] = [];
  try {
    for (let i = 0; i < count; i++) streams.push(table.create(streamOptions, null));
  } catch (e) {
    for (const x of streams) x._fail(e as StreamError);
    throw e;
  }
  const first = streams[0];
  first._expectAnswer((bytes) => unwrapAnswer(table, streams, bytes));
  const extraStreamIds = streams.slice(1).map((x) => x.id);
  const settings = encodeStreamSettings({ ...first.settings(), extraStreamIds });
  let answer;
  try {
    answer = fabric !== null
      ? await fabric.calls.call(service, method, request, settings, {
        ...opts,
        timeoutMs: opts.timeoutMs ?? ("_timeoutMs" in via ? via._timeoutMs : undefined),
      })
      : await channel.call(service, method, request, { ...opts, streamSettings: settings });
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e);
    for (const x of streams) {
      x._fail(new StreamError("refused", `${service}.${method} failed: ${text}`, e));
    }
    throw e;
  }
  if (first.remoteSettings === null) {
    const e = new StreamError(
      "refused",
      `${service}.${method} answered without accepting a stream`,
    );
    for (const x of streams) x._fail(e);
    throw e;
  }
  const { response, attachment, userFields, trailers } = answer;
  return { streams, response, attachment, userFields, trailers };
}

/**
 * The first message of a client's first stream is the opening call's answer (a whole baidu_std
 * frame): connect the streams with the settings it carries (the first with its `stream_id`, the
 * others in order with its `extra_stream_ids`), then hand the answer to the channel.
 */
function unwrapAnswer(table: StreamTable, streams: Stream[], bytes: Uint8Array): void {
  const s = streams[0];
  let got: [RpcMeta, Uint8Array, Uint8Array] | undefined;
  const parser = new FrameParser((m, p, a) => (got = [m, p, a]));
  try {
    parser.push(bytes);
    if (got === undefined) throw new Error(`a truncated frame of ${bytes.length} bytes`);
  } catch (e) {
    s.reset(`the answer inside the stream is not a baidu_std frame: ${(e as Error).message}`);
    return;
  }
  const [meta, payload, attachment] = got;
  const raw = meta.streamSettings;
  if (raw !== undefined && !meta.response?.errorCode) {
    try {
      const remote = decodeStreamSettings(raw);
      const extra = remote.extraStreamIds;
      s._connect({ ...remote, extraStreamIds: [] });
      for (let i = 1; i < streams.length; i++) {
        const id = extra[i - 1];
        if (id === undefined) {
          streams[i]._fail(
            new StreamError(
              "refused",
              `the server paired ${extra.length + 1} of ${streams.length} streams`,
            ),
          );
        } else streams[i]._connect({ ...remote, streamId: id, extraStreamIds: [] });
      }
    } catch (e) {
      s.reset(`the answer's stream_settings: ${(e as Error).message}`);
    }
  }
  table.answers?.(meta, payload, attachment);
}
