/**
 * brpc's RDMA handshake on a fresh TCP connection, both sides, as explicit state machines with
 * brpc's state names (apache/brpc `rdma_endpoint.cpp`):
 * ```
 *  client  C_ALLOC_QPCQ → C_HELLO_SEND → C_HELLO_WAIT → C_BRINGUP_QP → C_ACK_SEND → ESTABLISHED
 *  server  S_HELLO_WAIT → S_ALLOC_QPCQ → S_BRINGUP_QP → S_HELLO_SEND → S_ACK_WAIT → ESTABLISHED
 * ```
 * Either may end in FALLBACK_TCP (the connection goes on as plain baidu_std: no QP could be
 * made, the peer's hello refuses RDMA, the bring-up failed, the ACK says TCP) or FAILED (the
 * peer broke the protocol, went away or took too long: the connection is closed). The reason is
 * given to `log` once per ending. As in brpc, a client that cannot allocate a QP sends no hello
 * at all, and a server tells a hello from a baidu_std frame by its first four bytes ("RDMA").
 *
 * Control path (allocates, awaits). Threading: the connection's JS thread.
 * @module
 */
import { StateMachine, type Transition } from "../../util/state_machine.ts";
import { awaitServerHello, ending, refused, sniffHello } from "../tcp/hello_steps.ts";
import { errorLine as msg, TimedReader } from "../tcp/timed_reader.ts";
import type { TcpConn } from "../tcp/tcp.ts";
import {
  ACK_LEN,
  ackSaysRdma,
  type BrpcHello,
  decodeHello,
  encodeAck,
  encodeHello,
  FALLBACK_HELLO,
  HELLO_LEN,
  helloFor,
  helloLength,
  helloRefusal,
  isHelloMagic,
  showMagic,
} from "./hello.ts";
import type { BrpcRdmaOptions } from "./options.ts";
import type { BrpcQp, BrpcQpFactory } from "./qp_port.ts";
import { sendBytesFor } from "./send_ring.ts";
import { BrpcRdmaConn } from "./stream_conn.ts";

/** Client states (brpc's names). */
export type BrpcClientState =
  | "C_ALLOC_QPCQ"
  | "C_HELLO_SEND"
  | "C_HELLO_WAIT"
  | "C_BRINGUP_QP"
  | "C_ACK_SEND"
  | "ESTABLISHED"
  | "FALLBACK_TCP"
  | "FAILED";
/** Server states (brpc's names). */
export type BrpcServerState =
  | "S_HELLO_WAIT"
  | "S_ALLOC_QPCQ"
  | "S_BRINGUP_QP"
  | "S_HELLO_SEND"
  | "S_ACK_WAIT"
  | "ESTABLISHED"
  | "FALLBACK_TCP"
  | "FAILED";

const END = { ESTABLISHED: [], FALLBACK_TCP: [], FAILED: [] } as const;
const CLIENT: Record<BrpcClientState, readonly BrpcClientState[]> = {
  C_ALLOC_QPCQ: ["C_HELLO_SEND", "FALLBACK_TCP", "FAILED"],
  C_HELLO_SEND: ["C_HELLO_WAIT", "FAILED"],
  C_HELLO_WAIT: ["C_BRINGUP_QP", "C_ACK_SEND", "FAILED"],
  C_BRINGUP_QP: ["C_ACK_SEND", "FAILED"],
  C_ACK_SEND: ["ESTABLISHED", "FALLBACK_TCP", "FAILED"],
  ...END,
};
const SERVER: Record<BrpcServerState, readonly BrpcServerState[]> = {
  S_HELLO_WAIT: ["S_ALLOC_QPCQ", "S_HELLO_SEND", "FAILED"],
  S_ALLOC_QPCQ: ["S_BRINGUP_QP", "S_HELLO_SEND", "FAILED"],
  S_BRINGUP_QP: ["S_HELLO_SEND", "FAILED"],
  S_HELLO_SEND: ["S_ACK_WAIT", "FAILED"],
  S_ACK_WAIT: ["ESTABLISHED", "FALLBACK_TCP", "FAILED"],
  ...END,
};

/** How a handshake ended. */
export interface HandshakeOutcome<S extends string> {
  /** ESTABLISHED, FALLBACK_TCP or FAILED; the server adds NOT_RDMA (a plain baidu_std peer). */
  state: S | "NOT_RDMA";
  /** Why it fell back or failed. */
  reason?: string;
  /** The connection to run baidu_std on (RDMA or the TCP one); null when FAILED (closed). */
  conn: TcpConn | null;
  /** Client only: the server is not in RDMA mode (closed on the hello, or not a hello back). */
  notRdmaServer?: boolean;
  /** Every transition, with reasons and times. */
  history: readonly Transition<S>[];
}

/** Reads the rest of a hello whose magic was read: msg_len, the base body, the extension. */
async function readHello(r: TimedReader, magic: Uint8Array): Promise<BrpcHello | string> {
  const len = await r.read(2, "hello msg_len");
  const head = new Uint8Array(6);
  head.set(magic, 0);
  head.set(len, 4);
  const n = helloLength(head);
  if (typeof n === "string") return n;
  const rest = await r.read(HELLO_LEN - 6, "hello body");
  if (n > HELLO_LEN) await r.read(n - HELLO_LEN, "hello extension"); // ignored, as in v2
  const all = new Uint8Array(HELLO_LEN);
  all.set(head, 0);
  all.set(rest, 6);
  return decodeHello(all);
}

const outcome = <S extends string>(
  m: StateMachine<S>,
  conn: TcpConn | null,
  extra: Partial<HandshakeOutcome<S>> = {},
): HandshakeOutcome<S> => ({ ...ending(m), conn, ...extra });

/** The RDMA hello, as the server sniffs it and the client waits for it. */
const RDMA_HELLO = {
  mode: "RDMA",
  helloName: "an RDMA hello",
  magicLen: 4,
  isMagic: isHelloMagic,
  show: showMagic,
  readRest: readHello,
};

/**
 * The client side, on a TCP connection just opened. Resolves (never rejects) with the outcome;
 * on FALLBACK_TCP the same TCP connection carries baidu_std, on FAILED it was closed.
 */
export async function clientHandshake(
  tcp: TcpConn,
  options: BrpcRdmaOptions,
  openQp: BrpcQpFactory,
  log?: (line: string) => void,
): Promise<HandshakeOutcome<BrpcClientState>> {
  const r0 = tcp.remoteAddress;
  const m = new StateMachine<BrpcClientState>(
    `brpc-rdma client to ${r0.host}:${r0.port}`,
    "C_ALLOC_QPCQ",
    CLIENT,
    log,
  );
  const deadline = Date.now() + options.handshakeTimeoutMs;
  let qp: BrpcQp;
  try {
    qp = await openQp(options, tcp.localAddress);
  } catch (e) {
    m.to("FALLBACK_TCP", `no QP on this host: ${msg(e)}`);
    return outcome(m, tcp);
  }
  const fail = (reason: string, notRdmaServer = false) => {
    qp.close();
    tcp.close();
    m.to("FAILED", reason);
    return outcome(m, null, { notRdmaServer });
  };
  m.to("C_HELLO_SEND");
  if (!tcp.write(encodeHello(helloFor(qp)))) {
    return fail("the connection closed before the hello");
  }
  m.to("C_HELLO_WAIT");
  const r = new TimedReader(tcp, deadline);
  const remote = await awaitServerHello(r, RDMA_HELLO);
  if (refused(remote)) return fail(remote.reason, remote.notModeServer);
  let why = helloRefusal(remote);
  if (why === null) {
    m.to("C_BRINGUP_QP");
    try {
      qp.bringUp(remote, sendBytesFor(qp, remote));
    } catch (e) {
      why = `QP bring-up failed: ${msg(e)}`;
    }
  }
  m.to("C_ACK_SEND");
  if (!tcp.write(encodeAck(why === null))) return fail("the connection closed before the ACK");
  const left = r.reader.release();
  if (why !== null) {
    qp.close();
    tcp.unread(left);
    m.to("FALLBACK_TCP", why);
    return outcome(m, tcp);
  }
  if (left.length > 0) return fail(`${left.length} unexpected byte(s) after the server hello`);
  const conn = new BrpcRdmaConn(tcp, qp, remote);
  m.to("ESTABLISHED");
  return outcome(m, conn);
}

/**
 * The server side, on an accepted TCP connection. Waits (up to `sniffTimeoutMs`, 0 = no limit) for the first
 * four bytes: anything but "RDMA" is a plain baidu_std peer (state NOT_RDMA, the bytes are put
 * back). Resolves (never rejects) with the outcome. `onFirstBytes` is called once those four
 * bytes came (the caller may close a connection that stays silent sooner, by its own rules).
 */
export async function serverHandshake(
  tcp: TcpConn,
  options: BrpcRdmaOptions,
  openQp: BrpcQpFactory,
  sniffTimeoutMs: number,
  log?: (line: string) => void,
  onFirstBytes?: () => void,
): Promise<HandshakeOutcome<BrpcServerState>> {
  const r0 = tcp.remoteAddress;
  const m = new StateMachine<BrpcServerState>(
    `brpc-rdma server, client ${r0.host}:${r0.port}`,
    "S_HELLO_WAIT",
    SERVER,
    log,
  );
  let qp: BrpcQp | null = null;
  const fail = (reason: string) => {
    qp?.close();
    tcp.close();
    m.to("FAILED", reason);
    return outcome(m, null);
  };
  const sniffed = await sniffHello(
    tcp,
    RDMA_HELLO,
    sniffTimeoutMs,
    options.handshakeTimeoutMs,
    onFirstBytes,
  );
  if ("error" in sniffed) return fail(sniffed.error);
  if (!sniffed.hello) return { state: "NOT_RDMA", conn: tcp, history: [] };
  const { magic, reader } = sniffed;
  let remote: BrpcHello;
  try {
    const h = await readHello(reader, magic);
    if (typeof h === "string") return fail(h);
    remote = h;
  } catch (e) {
    return fail(msg(e));
  }
  let why = helloRefusal(remote);
  if (why === null) {
    m.to("S_ALLOC_QPCQ");
    try {
      qp = await openQp(options, tcp.localAddress);
      m.to("S_BRINGUP_QP");
      qp.bringUp(remote, sendBytesFor(qp, remote));
    } catch (e) {
      why = `${qp === null ? "no QP on this host" : "QP bring-up failed"}: ${msg(e)}`;
      qp?.close();
      qp = null;
    }
  }
  m.to("S_HELLO_SEND");
  const hello = qp !== null ? helloFor(qp) : FALLBACK_HELLO;
  if (!tcp.write(encodeHello(hello))) return fail("the connection closed before the hello");
  m.to("S_ACK_WAIT");
  let ack: Uint8Array;
  try {
    ack = await reader.read(ACK_LEN, "ACK");
  } catch (e) {
    return fail(msg(e));
  }
  const left = reader.reader.release();
  if (!ackSaysRdma(ack)) {
    qp?.close();
    tcp.unread(left);
    m.to("FALLBACK_TCP", why ?? "the client's ACK says TCP");
    return outcome(m, tcp);
  }
  if (qp === null) return fail(`the client's ACK asks for RDMA, but this side fell back: ${why}`);
  if (left.length > 0) return fail(`${left.length} unexpected byte(s) after the ACK`);
  const conn = new BrpcRdmaConn(tcp, qp, remote);
  m.to("ESTABLISHED");
  return outcome(m, conn);
}
