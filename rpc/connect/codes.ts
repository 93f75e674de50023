/**
 * How verbus and baidu_std errors become `ConnectError`s (client side, {@link connectErrorOf})
 * and how a `ConnectError` thrown by a handler becomes a baidu_std `error_code` (server side,
 * {@link rpcErrorOf}). The tables follow brpc's own gRPC mapping (`src/brpc/grpc.cpp`,
 * `ErrorCodeToGrpcStatus`) where it has one, except that timeouts are `DeadlineExceeded`.
 *
 * Client side — an answer with a non-zero `error_code` (an `RpcError`):
 *
 * | baidu_std `error_code`                              | Connect `Code`     |
 * |-----------------------------------------------------|--------------------|
 * | ENOSERVICE 1001, ENOMETHOD 1002                     | Unimplemented      |
 * | EREQUEST 1003, EINVAL 22                            | InvalidArgument    |
 * | ERPCAUTH 1004                                       | Unauthenticated    |
 * | EPERM 1, EACCES 13                                  | PermissionDenied   |
 * | ERPCTIMEDOUT 1008, ETIMEDOUT 110                    | DeadlineExceeded   |
 * | ECANCELED 125                                       | Canceled           |
 * | ELIMIT 2004, ELOGOFF 2003, EOVERCROWDED 1011,       | Unavailable        |
 * | EFAILEDSOCKET 1009, ECLOSE 2005, EEOF 1014,         |                    |
 * | ERDMA… 3001–3005, ECONNREFUSED/RESET 111/104        |                    |
 * | EINTERNAL 2001, ERESPONSE 2002                      | Internal           |
 * | ENOENT 2                                            | NotFound           |
 * | EEXIST 17                                           | AlreadyExists      |
 * | ENOSPC 28, ENOMEM 12                                | ResourceExhausted  |
 * | anything else (application codes)                   | Unknown            |
 *
 * The `ConnectError`'s message is the server's `error_text`; its `metadata` carries the answer's
 * headers and trailers and the number as `brpc-error-code`; its `details` are the answer's (read
 * them with `findDetails(Schema)`), and its `cause` is the `RpcError`.
 *
 * Client side — verbus errors (`VerbusError.code`): TIMEOUT → DeadlineExceeded;
 * CONNECT_FAILED, UNAVAILABLE (a cluster with no server to take the call), CONNECTION_CLOSED,
 * CLOSED, FABRIC, HANDSHAKE → Unavailable;
 * INVALID_OPTIONS, INVALID_ARGUMENT → InvalidArgument; FULL → ResourceExhausted;
 * PROTOCOL, BOUNDS, INTEGRITY → Internal; an aborted signal → Canceled; others → Unknown.
 *
 * Server side — a handler throws `ConnectError` with code C: the answer carries
 * `error_code` = the first row above whose Connect code is C (Unimplemented → ENOMETHOD,
 * InvalidArgument → EREQUEST, Unauthenticated → ERPCAUTH, PermissionDenied → EPERM,
 * DeadlineExceeded → ERPCTIMEDOUT, Canceled → ECANCELED, Unavailable → ELOGOFF… see
 * {@link BRPC_CODE_OF}), so a verbus client maps it back to C, and `error_text` = its raw
 * message. Codes without a brpc counterpart (ResourceExhausted, FailedPrecondition, Aborted,
 * OutOfRange, DataLoss, Unknown) are sent as EINTERNAL with the text `[CodeName] message`; a
 * verbus client reads the code back from that prefix (a brpc client sees EINTERNAL). The error's
 * details go with the answer (RpcMeta extension 1001, on every path).
 *
 * Pure functions; any thread.
 * @module
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ErrorDetail } from "../protocol/rpc_meta.ts";
import { appendFields } from "./headers.ts";
import { VerbusError, type VerbusErrorCode } from "../../errors.ts";
import {
  ECLOSE,
  EEOF,
  EFAILEDSOCKET,
  EINTERNAL,
  ELIMIT,
  ELOGOFF,
  ENOMETHOD,
  ENOSERVICE,
  EOVERCROWDED,
  ERDMA,
  ERDMALOCAL,
  EREQUEST,
  ERESPONSE,
  ERPCAUTH,
  ERPCTIMEDOUT,
  RpcError,
} from "../errors.ts";

/** Linux errno values a brpc server may answer with (see `errors.ts` for their names). */
const EPERM = 1, ENOENT = 2, ENOMEM = 12, EACCES = 13, EEXIST = 17, EINVAL = 22, ENOSPC = 28;
const ECONNRESET = 104, ETIMEDOUT = 110, ECONNREFUSED = 111, ECANCELED = 125;

/** The header of a `ConnectError`'s metadata that carries the baidu_std `error_code`. */
export const BRPC_ERROR_CODE_HEADER = "brpc-error-code";

const CONNECT_CODE_OF: ReadonlyMap<number, Code> = new Map<number, Code>([
  [ENOSERVICE, Code.Unimplemented],
  [ENOMETHOD, Code.Unimplemented],
  [EREQUEST, Code.InvalidArgument],
  [EINVAL, Code.InvalidArgument],
  [ERPCAUTH, Code.Unauthenticated],
  [EPERM, Code.PermissionDenied],
  [EACCES, Code.PermissionDenied],
  [ERPCTIMEDOUT, Code.DeadlineExceeded],
  [ETIMEDOUT, Code.DeadlineExceeded],
  [ECANCELED, Code.Canceled],
  [ELIMIT, Code.Unavailable],
  [ELOGOFF, Code.Unavailable],
  [EOVERCROWDED, Code.Unavailable],
  [EFAILEDSOCKET, Code.Unavailable],
  [ECLOSE, Code.Unavailable],
  [EEOF, Code.Unavailable],
  [ECONNREFUSED, Code.Unavailable],
  [ECONNRESET, Code.Unavailable],
  [EINTERNAL, Code.Internal],
  [ERESPONSE, Code.Internal],
  [ENOENT, Code.NotFound],
  [EEXIST, Code.AlreadyExists],
  [ENOSPC, Code.ResourceExhausted],
  [ENOMEM, Code.ResourceExhausted],
]);

/**
 * The baidu_std `error_code` a handler's `ConnectError` is answered with, by Connect code
 * (codes absent here go as EINTERNAL).
 */
export const BRPC_CODE_OF: Readonly<Partial<Record<Code, number>>> = Object.freeze({
  [Code.Canceled]: ECANCELED,
  [Code.InvalidArgument]: EREQUEST,
  [Code.DeadlineExceeded]: ERPCTIMEDOUT,
  [Code.NotFound]: ENOENT,
  [Code.AlreadyExists]: EEXIST,
  [Code.PermissionDenied]: EPERM,
  [Code.Unimplemented]: ENOMETHOD,
  [Code.Internal]: EINTERNAL,
  [Code.Unavailable]: ELOGOFF,
  [Code.Unauthenticated]: ERPCAUTH,
});

const VERBUS_CODE_OF: Partial<Record<VerbusErrorCode, Code>> = {
  TIMEOUT: Code.DeadlineExceeded,
  CONNECT_FAILED: Code.Unavailable,
  UNAVAILABLE: Code.Unavailable,
  CONNECTION_CLOSED: Code.Unavailable,
  CLOSED: Code.Unavailable,
  FABRIC: Code.Unavailable,
  HANDSHAKE: Code.Unavailable,
  INVALID_OPTIONS: Code.InvalidArgument,
  INVALID_ARGUMENT: Code.InvalidArgument,
  FULL: Code.ResourceExhausted,
  PROTOCOL: Code.Internal,
  BOUNDS: Code.Internal,
  INTEGRITY: Code.Internal,
};

/** The Connect code of a baidu_std `error_code` (the table in the module doc). */
export function connectCodeOf(errorCode: number): Code {
  const c = CONNECT_CODE_OF.get(errorCode);
  if (c !== undefined) return c;
  return errorCode >= ERDMA && errorCode <= ERDMALOCAL ? Code.Unavailable : Code.Unknown;
}

/**
 * Any error of a verbus call (an `RpcError` answer, a verbus failure, anything thrown) as a
 * `ConnectError`, per the tables in the module doc; a `ConnectError` is returned as it is.
 * `where` (e.g. `example.EchoService/Echo`) is named in messages that have no text of their own.
 */
export function connectErrorOf(e: unknown, where: string): ConnectError {
  if (e instanceof ConnectError) return e;
  if (e instanceof RpcError) {
    let code = connectCodeOf(e.errorCode), text = e.errorText;
    const tagged = e.errorCode === EINTERNAL ? /^\[([A-Za-z]+)\] /.exec(text) : null;
    const named = tagged ? (Code as unknown as Record<string, Code>)[tagged[1]] : undefined;
    if (typeof named === "number") (code = named, text = text.slice(tagged![0].length));
    const metadata = appendFields(appendFields(new Headers(), e.userFields), e.trailers);
    metadata.set(BRPC_ERROR_CODE_HEADER, String(e.errorCode));
    const ce = new ConnectError(
      text || `${where} failed with error_code ${e.errorCode}`,
      code,
      metadata,
      undefined,
      e,
    );
    // Connect's incoming shape: findDetails(Schema) decodes those of a type it is given.
    if (e.details !== undefined) { for (const d of e.details) ce.details.push(d); }
    return ce;
  }
  if (e instanceof VerbusError) {
    return new ConnectError(e.message, VERBUS_CODE_OF[e.code] ?? Code.Unknown, undefined, [], e);
  }
  return ConnectError.from(e);
}

/**
 * A `ConnectError` thrown by a handler as the `RpcError` the dispatcher answers with (the
 * server-side table of the module doc). Other values are returned as they are (the dispatcher
 * answers them with EINTERNAL and logs them).
 */
export function rpcErrorOf(e: unknown): unknown {
  if (!(e instanceof ConnectError)) return e;
  const code = BRPC_CODE_OF[e.code];
  const r = code !== undefined
    ? new RpcError(code, e.rawMessage)
    : new RpcError(EINTERNAL, `[${Code[e.code] ?? "Unknown"}] ${e.rawMessage}`);
  if (e.details.length > 0) r.details = e.details.map(detailOf);
  return r;
}

/** A Connect error detail (a message with its schema, or one received) as it travels. */
function detailOf(d: ConnectError["details"][number]): ErrorDetail {
  if ("desc" in d) {
    return { type: d.desc.typeName, value: toBinary(d.desc, create(d.desc, d.value)) };
  }
  return { type: d.type, value: d.value };
}
