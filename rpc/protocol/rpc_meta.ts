/**
 * `RpcMeta` of brpc's baidu_std protocol (apache/brpc `src/brpc/policy/baidu_rpc_meta.proto`,
 * proto2), encoded and decoded by hand for speed: no reflection, no intermediate writer chunks,
 * one scratch buffer reused for every encode.
 *
 * Field numbers: RpcMeta { request = 1, response = 2, compress_type = 3, correlation_id = 4
 * (int64), attachment_size = 5, chunk_info = 6, authentication_data = 7, stream_settings = 8,
 * user_fields = 9 (map<string,string>) }; RpcRequestMeta { service_name = 1, method_name = 2,
 * log_id = 3, trace_id = 4, span_id = 5, parent_span_id = 6 (int64s), request_id = 7,
 * timeout_ms = 8 }; RpcResponseMeta { error_code = 1, error_text = 2 }.
 *
 * Two verbus extension fields, which stock brpc skips as unknown fields (proto2 keeps them
 * aside and never reads them): `verbus_trailers = 1000` (map<string,string>, the trailers of an
 * answer; brpc has no trailers) and `verbus_error_details = 1001` (repeated
 * `{ string type_url = 1; bytes value = 2; }`, google.protobuf.Any's layout: the details of an
 * error answer). Response headers go in `user_fields`, as brpc's `response_user_fields()` do.
 *
 * int64 fields ({@link Int64}) decode to a `number` when the value is a safe integer and to a
 * `bigint` otherwise, so every value round-trips exactly (a stock brpc client's correlation ids
 * are bthread ids and may exceed 2^53). Encoding accepts either. Absent optional fields are
 * `undefined`; unknown fields are skipped; `chunk_info` and `stream_settings` (not interpreted
 * by verbus) are kept as their raw encoded message bytes.
 *
 * The codec lives in `rpc_meta_encode.ts` and `rpc_meta_decode.ts` (re-exported here).
 *
 * Threading: module-level scratch state; call from one JS thread (each worker has its own copy).
 * @module
 */
/** A protobuf int64: a safe-integer `number`, or a `bigint` when it does not fit one. */
export type Int64 = number | bigint;

/** `brpc.policy.RpcRequestMeta`. */
export interface RpcRequestMeta {
  /** Full protobuf service name, e.g. `example.EchoService` (required). */
  serviceName: string;
  /** Method name, e.g. `Echo` (required). */
  methodName: string;
  logId?: Int64;
  traceId?: Int64;
  spanId?: Int64;
  parentSpanId?: Int64;
  /** Corresponds to the HTTP `x-request-id` header. */
  requestId?: string;
  /** The client's timeout for this call, in ms. */
  timeoutMs?: number;
}

/** `brpc.policy.RpcResponseMeta`. */
export interface RpcResponseMeta {
  /** 0 or absent = success; otherwise a brpc errno (see `rpc/errors.ts`). */
  errorCode?: number;
  errorText?: string;
}

/**
 * `brpc.policy.RpcMeta`. Objects returned by {@link decodeRpcMeta} are owned by the caller,
 * except `request`, which may be a frozen object shared with earlier decodes (read it, never
 * modify it).
 */
export interface RpcMeta {
  request?: RpcRequestMeta;
  response?: RpcResponseMeta;
  compressType?: number;
  correlationId?: Int64;
  /** Bytes at the end of the body that are the attachment (absent = none). */
  attachmentSize?: number;
  /** Raw encoded `ChunkInfo` (not interpreted). */
  chunkInfo?: Uint8Array;
  authenticationData?: Uint8Array;
  /** Raw encoded `StreamSettings` (not interpreted). */
  streamSettings?: Uint8Array;
  userFields?: Map<string, string>;
  /** Extension 1000: the trailers of an answer (verbus peers only). */
  trailers?: Map<string, string>;
  /** Extension 1001: the details of an error answer (verbus peers only). */
  errorDetails?: ErrorDetail[];
}

/**
 * One error detail as it travels: a protobuf message's full type name and its encoded bytes
 * (Connect's `IncomingDetail` shape; `value` is owned by whoever holds the detail).
 */
export interface ErrorDetail {
  type: string;
  value: Uint8Array;
}

/** RpcMeta field number of the verbus trailers extension. */
export const FIELD_TRAILERS = 1000;
/** RpcMeta field number of the verbus error-details extension. */
export const FIELD_ERROR_DETAILS = 1001;

export { copyEncodedMeta, encodeRpcMeta, encodeRpcMetaToScratch } from "./rpc_meta_encode.ts";
export { decodeRpcMeta } from "./rpc_meta_decode.ts";
