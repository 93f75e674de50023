/**
 * brpc's error codes (apache/brpc `src/brpc/errno.proto`, enum `brpc.Errno`) and {@link RpcError},
 * the error a call fails with when the server answers with a non-zero `error_code`.
 *
 * Servers may also answer with a system errno (< 1000, e.g. 110 ETIMEDOUT) or an application code:
 * `RpcError.errorCode` carries whatever number came over the wire.
 * @module
 */
import { VerbusError } from "../errors.ts";
import type { ErrorDetail, RpcMeta } from "./protocol/rpc_meta.ts";

// Caused by the client / the call (1xxx).
/** Service not found. */
export const ENOSERVICE = 1001;
/** Method not found. */
export const ENOMETHOD = 1002;
/** Bad request (unparsable request, bad attachment size, ...). */
export const EREQUEST = 1003;
/** Unauthorized. */
export const ERPCAUTH = 1004;
/** Too many sub calls failed (ParallelChannel). */
export const ETOOMANYFAILS = 1005;
/** [Internal] ParallelChannel finished. */
export const EPCHANFINISH = 1006;
/** Sending a backup request. */
export const EBACKUPREQUEST = 1007;
/** The call timed out. */
export const ERPCTIMEDOUT = 1008;
/** Broken socket. */
export const EFAILEDSOCKET = 1009;
/** Bad HTTP call. */
export const EHTTP = 1010;
/** The server is overcrowded. */
export const EOVERCROWDED = 1011;
/** RtmpRetryingClientStream is publishable. */
export const ERTMPPUBLISHABLE = 1012;
/** createStream was rejected by the RTMP server. */
export const ERTMPCREATESTREAM = 1013;
/** Got EOF. */
export const EEOF = 1014;
/** The socket was not needed. */
export const EUNUSED = 1015;
/** SSL related error. */
export const ESSL = 1016;
/** The H2 socket ran out of streams. */
export const EH2RUNOUTSTREAMS = 1017;

// Caused by the server (2xxx).
/** Internal server error (a handler threw). */
export const EINTERNAL = 2001;
/** Bad response. */
export const ERESPONSE = 2002;
/** The server is stopping. */
export const ELOGOFF = 2003;
/** Reached the server's limit on resources. */
export const ELIMIT = 2004;
/** The server closed the socket on purpose. */
export const ECLOSE = 2005;
/** Failed ITP response. */
export const EITP = 2006;

// RDMA (3xxx, either side).
/** RDMA verbs error. */
export const ERDMA = 3001;
/** rdmacm error. */
export const ERDMACM = 3002;
/** RDMA is not available now. */
export const ERDMAUNAVAIL = 3003;
/** RDMA is not supported between clusters. */
export const ERDMAOUTCLUSTER = 3004;
/** RDMA is not used for local connections. */
export const ERDMALOCAL = 3005;

/** Every brpc error code above by name. */
export const BRPC_ERRNO: Readonly<Record<string, number>> = Object.freeze({
  ENOSERVICE,
  ENOMETHOD,
  EREQUEST,
  ERPCAUTH,
  ETOOMANYFAILS,
  EPCHANFINISH,
  EBACKUPREQUEST,
  ERPCTIMEDOUT,
  EFAILEDSOCKET,
  EHTTP,
  EOVERCROWDED,
  ERTMPPUBLISHABLE,
  ERTMPCREATESTREAM,
  EEOF,
  EUNUSED,
  ESSL,
  EH2RUNOUTSTREAMS,
  EINTERNAL,
  ERESPONSE,
  ELOGOFF,
  ELIMIT,
  ECLOSE,
  EITP,
  ERDMA,
  ERDMACM,
  ERDMAUNAVAIL,
  ERDMAOUTCLUSTER,
  ERDMALOCAL,
});

const NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(BRPC_ERRNO).map(([k, v]) => [v, k]),
);

/** The symbolic name of a brpc error code, e.g. `brpcErrorName(1001) === "ENOSERVICE"`. */
export function brpcErrorName(code: number): string {
  return NAMES.get(code) ?? `error ${code}`;
}

/**
 * The server answered a call with a non-zero `error_code`. Thrown by server handlers to choose the
 * code and text of the answer; thrown to callers when an answer carries an error.
 */
export class RpcError extends VerbusError {
  /** The wire `error_code` (a brpc errno such as {@link ENOSERVICE}, or an application code). */
  readonly errorCode: number;
  /** The wire `error_text`. */
  readonly errorText: string;
  /**
   * Error details (RpcMeta extension 1001): thrown by a handler, they are sent with the answer;
   * on the client, the details the answer carried.
   */
  details: ErrorDetail[] | undefined = undefined;
  /** Client side: the answer's `user_fields` (response headers), if it carried any. */
  userFields: ReadonlyMap<string, string> | undefined = undefined;
  /** Client side: the answer's trailers (RpcMeta extension 1000), if it carried any. */
  trailers: ReadonlyMap<string, string> | undefined = undefined;

  constructor(errorCode: number, errorText: string, context: Record<string, unknown> = {}) {
    super("RPC_ERROR", `${brpcErrorName(errorCode)} (${errorCode}): ${errorText}`, {
      context: { ...context, errorCode },
    });
    this.errorCode = errorCode;
    this.errorText = errorText;
  }
}

/**
 * The error of an answer whose meta carries a non-zero `error_code` — with the error details,
 * response headers and trailers the answer carried — or undefined for a successful answer.
 * Used wherever a client reads baidu_std answers (the TCP channel, a fabric session's pipe).
 */
export function answerError(meta: RpcMeta, service: string, method: string): RpcError | undefined {
  const r = meta.response;
  if (r === undefined || !r.errorCode) return undefined;
  const e = new RpcError(r.errorCode, r.errorText ?? "", { service, method });
  e.details = meta.errorDetails;
  e.userFields = meta.userFields;
  e.trailers = meta.trailers;
  return e;
}
