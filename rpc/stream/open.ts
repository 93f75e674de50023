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
import type { CallOptions } from "../channel_call.ts";
import type { Channel } from "../channel.ts";
import { FrameParser } from "../protocol/frame_parser.ts";
import type { RpcMeta } from "../protocol/rpc_meta.ts";
import { decodeStreamSettings, encodeStreamSettings } from "../protocol/stream_frame.ts";
import type { Stream } from "./stream.ts";
import { StreamError } from "./stream_error.ts";
import type { StreamOptions } from "./stream_options.ts";
import type { StreamTable } from "./stream_table.ts";

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

/** Anything that has a baidu_std channel: a `Channel`, or a direct `Client` (`client.channel`). */
export type StreamVia = Channel | { readonly channel: Channel };

function channelOf(via: StreamVia): Channel {
  return "channel" in via ? via.channel : via;
}

/**
 * Opens a stream with a call of `service.method` carrying `request`. Streams always run over the
 * TCP connection (a `Client`'s fabric session carries calls only). Rejects with the call's error
 * (`RpcError`, `TimeoutError`, …) or with {@link StreamError} kind "refused" when the server
 * answered without accepting a stream.
 */
export async function openStream(
  via: StreamVia,
  service: string,
  method: string,
  request: Uint8Array,
  options: OpenStreamOptions = {},
): Promise<OpenedStream> {
  const channel = channelOf(via);
  const table = await channel._streams();
  const { stream: streamOptions, ...callOptions } = options;
  const s = table.create(streamOptions, null);
  s._expectAnswer((bytes) => unwrapAnswer(table, s, bytes));
  const settings = encodeStreamSettings(s.settings());
  let answer;
  try {
    answer = await channel.call(service, method, request, {
      ...callOptions,
      streamSettings: settings,
    });
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e);
    s._fail(new StreamError("refused", `${service}.${method} failed: ${text}`, e));
    throw e;
  }
  if (s.remoteSettings === null) {
    const e = new StreamError(
      "refused",
      `${service}.${method} answered without accepting a stream`,
    );
    s._fail(e);
    throw e;
  }
  const { response, attachment, userFields, trailers } = answer;
  return { stream: s, response, attachment, userFields, trailers };
}

/**
 * The first message of a client stream is the opening call's answer (a whole baidu_std frame):
 * connect the stream with the settings it carries, then hand the answer to the channel.
 */
function unwrapAnswer(table: StreamTable, s: Stream, bytes: Uint8Array): void {
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
      s._connect(decodeStreamSettings(raw));
    } catch (e) {
      s.reset(`the answer's stream_settings: ${(e as Error).message}`);
    }
  }
  table.answers?.(meta, payload, attachment);
}
