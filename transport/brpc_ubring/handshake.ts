/**
 * brpc's UBRing handshake on a fresh TCP connection, both sides, as explicit state machines with
 * brpc's state names (`ub_endpoint.cpp`; the format is in layout.ts):
 * ```
 *  client  C_ALLOC_SHM → C_HELLO_SEND → C_HELLO_WAIT → C_MAP_REMOTE_SHM → C_ACK_SEND → ESTABLISHED
 *  server  S_HELLO_WAIT → S_ALLOC_SHM → S_HELLO_SEND → S_ACK_WAIT → ESTABLISHED
 * ```
 * Either may end in FALLBACK_TCP (the connection goes on as plain baidu_std: an object could not
 * be created or mapped, the C helper that copies the ring's blocks cannot be loaded, the peer's
 * hello refuses the ring, the ACK says TCP) or FAILED (the peer
 * broke the protocol — a hello whose name is not its own object, a size that is not one, a tail
 * that gives another size than its hello, bytes after the hello — went away, or took too long:
 * the connection is closed). The reason is given to `log` once per ending. As in brpc, a client
 * that cannot create its object sends no hello, and a server tells a hello from a baidu_std
 * frame by its first two bytes ("UB").
 *
 * Every object this side created has its name unlinked when the handshake ends, whatever the
 * ending; every mapping is released unless the connection took it.
 *
 * Control path (allocates, awaits). Threading: the connection's JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { type Helper, loadHelper } from "../../ffi/helper.ts";
import { StateMachine } from "../../util/state_machine.ts";
import type { ShmMapping } from "../shm/shm_object.ts";
import { awaitServerHello, ending, refused, sniffHello } from "../tcp/hello_steps.ts";
import { errorLine as msg, TimedReader } from "../tcp/timed_reader.ts";
import type { TcpConn } from "../tcp/tcp.ts";
import {
  ackSaysRing,
  clientObjectName,
  decodeHello,
  encodeAck,
  encodeHello,
  FALLBACK_HELLO,
  isHelloMagic,
  nameRefusal,
  serverObjectName,
  showBytes,
  sizeRefusal,
  type UbringHello,
  versionRefusal,
} from "./hello.ts";
import { ACK_LEN, HELLO_LEN, HELLO_VER, IMPL_VER, objectBytesForTail } from "./layout.ts";
import {
  clientConnected,
  clientInit,
  createOwnObject,
  openPeerObject,
  type PeerObject,
  readTail,
  serverInit,
} from "./objects.ts";
import type { BrpcUbringOptions } from "./options.ts";
import { BrpcUbringConn } from "./stream_conn.ts";

/** Client states (brpc's names). */
export type UbringClientState =
  | "C_ALLOC_SHM"
  | "C_HELLO_SEND"
  | "C_HELLO_WAIT"
  | "C_MAP_REMOTE_SHM"
  | "C_ACK_SEND"
  | "ESTABLISHED"
  | "FALLBACK_TCP"
  | "FAILED";
/** Server states (brpc's names). */
export type UbringServerState =
  | "S_HELLO_WAIT"
  | "S_ALLOC_SHM"
  | "S_HELLO_SEND"
  | "S_ACK_WAIT"
  | "ESTABLISHED"
  | "FALLBACK_TCP"
  | "FAILED";

const END = { ESTABLISHED: [], FALLBACK_TCP: [], FAILED: [] } as const;
const CLIENT: Record<UbringClientState, readonly UbringClientState[]> = {
  C_ALLOC_SHM: ["C_HELLO_SEND", "FALLBACK_TCP", "FAILED"],
  C_HELLO_SEND: ["C_HELLO_WAIT", "FAILED"],
  C_HELLO_WAIT: ["C_MAP_REMOTE_SHM", "C_ACK_SEND", "FAILED"],
  C_MAP_REMOTE_SHM: ["C_ACK_SEND", "FAILED"],
  C_ACK_SEND: ["ESTABLISHED", "FALLBACK_TCP", "FAILED"],
  ...END,
};
const SERVER: Record<UbringServerState, readonly UbringServerState[]> = {
  S_HELLO_WAIT: ["S_ALLOC_SHM", "S_HELLO_SEND", "FAILED"],
  S_ALLOC_SHM: ["S_HELLO_SEND", "FAILED"],
  S_HELLO_SEND: ["S_ACK_WAIT", "FAILED"],
  S_ACK_WAIT: ["ESTABLISHED", "FALLBACK_TCP", "FAILED"],
  ...END,
};

/** How a handshake ended. */
export interface UbringOutcome<S extends string> {
  /** ESTABLISHED, FALLBACK_TCP or FAILED; the server adds NOT_UBRING (a plain baidu_std peer). */
  state: S | "NOT_UBRING";
  /** Why it fell back or failed. */
  reason?: string;
  /** The connection to run baidu_std on (the ring or the TCP one); null when FAILED (closed). */
  conn: TcpConn | null;
  /** Client only: the server is not in UBRing mode (closed on the hello, or not a hello back). */
  notUbringServer?: boolean;
  /** Every transition, with reasons. */
  history: readonly { from: S; to: S; reason?: string }[];
}

const outcome = <S extends string>(
  m: StateMachine<S>,
  conn: TcpConn | null,
  extra: Partial<UbringOutcome<S>> = {},
): UbringOutcome<S> => ({ ...ending(m), conn, ...extra });

/** Reads the 62 bytes after the magic and decodes the hello (a string: why it is not one). */
async function readHello(
  r: TimedReader,
  magic: Uint8Array,
  what: string,
): Promise<UbringHello | string> {
  const rest = await r.read(HELLO_LEN - 2, what);
  const all = new Uint8Array(HELLO_LEN);
  all.set(magic.subarray(0, 2), 0);
  all.set(rest, 2);
  return decodeHello(all);
}

/** The UBRing hello, as the server sniffs it and the client waits for it. */
const UBRING_HELLO = {
  mode: "UBRing",
  helloName: "a UBRing hello",
  magicLen: 2,
  isMagic: isHelloMagic,
  show: showBytes,
  readRest: (r: TimedReader, magic: Uint8Array) => readHello(r, magic, "server hello"),
};

/** What a side holds during its handshake, released unless the connection takes it. */
class Held {
  own: ShmMapping | null = null;
  peer: PeerObject | null = null;
  release(): void {
    this.own?.unlink();
    this.own?.close();
    this.peer?.close();
    this.own = this.peer = null;
  }
}

const objectBytes = (o: BrpcUbringOptions) => o.queueMiB * 1024 * 1024;

/** The C helper, which copies the ring's blocks, or why it cannot load (the ring is not used). */
async function ringHelper(): Promise<Helper | string> {
  try {
    return await loadHelper();
  } catch (e) {
    return `the C helper (it copies the ring's blocks) cannot be loaded: ${msg(e)}`;
  }
}

/**
 * The client side, on a TCP connection just opened. Resolves (never rejects) with the outcome;
 * on FALLBACK_TCP the same TCP connection carries baidu_std, on FAILED it was closed.
 */
export async function ubringClientHandshake(
  tcp: TcpConn,
  options: BrpcUbringOptions,
  log?: (line: string) => void,
): Promise<UbringOutcome<UbringClientState>> {
  const r0 = tcp.remoteAddress;
  const m = new StateMachine<UbringClientState>(
    `brpc-ubring client to ${r0.host}:${r0.port}`,
    "C_ALLOC_SHM",
    CLIENT,
    log,
  );
  const held = new Held();
  const size = objectBytes(options);
  const name = clientObjectName(tcp.localAddress);
  const helper = await ringHelper();
  if (typeof helper === "string") {
    m.to("FALLBACK_TCP", helper);
    return outcome(m, tcp);
  }
  try {
    held.own = await createOwnObject(name, size);
    clientInit(held.own.bytes);
  } catch (e) {
    m.to("FALLBACK_TCP", `cannot create this side's shm object ${name}: ${msg(e)}`);
    return outcome(m, tcp);
  }
  const fail = (reason: string, notUbringServer = false) => {
    held.release();
    tcp.close();
    m.to("FAILED", reason);
    return outcome(m, null, { notUbringServer });
  };
  m.to("C_HELLO_SEND");
  const hello = { msgLen: HELLO_LEN, helloVer: HELLO_VER, implVer: IMPL_VER, len: size, name };
  if (!tcp.write(encodeHello(hello))) return fail("the connection closed before the hello");
  m.to("C_HELLO_WAIT");
  const r = new TimedReader(tcp, Date.now() + options.handshakeTimeoutMs);
  const remote = await awaitServerHello(r, UBRING_HELLO);
  if (refused(remote)) return fail(remote.reason, remote.notModeServer);
  let why = versionRefusal(remote);
  if (why === null) {
    m.to("C_MAP_REMOTE_SHM");
    // The server's ring size comes from the tail it wrote into this side's object.
    const tail = readTail(held.own.bytes);
    const bytes = objectBytesForTail(tail);
    const bad = sizeRefusal(bytes, `the server's object size from its tail ${tail}`) ??
      (remote.len !== bytes
        ? `the server's hello says len ${remote.len}, its tail ${tail} says ${bytes}`
        : null);
    if (bad !== null) return fail(bad);
    try {
      held.peer = await openPeerObject(serverObjectName(name), bytes);
      clientConnected(held.own.bytes, held.peer.bytes);
    } catch (e) {
      if (e instanceof VerbusError && e.code === "BOUNDS") return fail(msg(e)); // smaller than said
      why = `cannot map the server's object: ${msg(e)}`;
    }
  }
  m.to("C_ACK_SEND");
  if (!tcp.write(encodeAck(why === null))) return fail("the connection closed before the ACK");
  const left = r.reader.release();
  held.own.unlink();
  if (why !== null) {
    held.release();
    tcp.unread(left);
    m.to("FALLBACK_TCP", why);
    return outcome(m, tcp);
  }
  if (left.length > 0) return fail(`${left.length} unexpected byte(s) after the server hello`);
  const conn = new BrpcUbringConn(tcp, held.own, held.peer!, helper, options, log);
  m.to("ESTABLISHED");
  return outcome(m, conn);
}

/**
 * The server side, on an accepted TCP connection. Waits (up to `sniffTimeoutMs`, 0 = no limit)
 * for the first two bytes: anything but "UB" is a plain baidu_std peer (state NOT_UBRING, the
 * bytes are put back). Resolves (never rejects) with the outcome. `onFirstBytes` is called once
 * those bytes came.
 */
export async function ubringServerHandshake(
  tcp: TcpConn,
  options: BrpcUbringOptions,
  sniffTimeoutMs: number,
  log?: (line: string) => void,
  onFirstBytes?: () => void,
): Promise<UbringOutcome<UbringServerState>> {
  const r0 = tcp.remoteAddress;
  const m = new StateMachine<UbringServerState>(
    `brpc-ubring server, client ${r0.host}:${r0.port}`,
    "S_HELLO_WAIT",
    SERVER,
    log,
  );
  const held = new Held();
  const fail = (reason: string) => {
    held.release();
    tcp.close();
    m.to("FAILED", reason);
    return outcome(m, null);
  };
  const sniffed = await sniffHello(
    tcp,
    UBRING_HELLO,
    sniffTimeoutMs,
    options.handshakeTimeoutMs,
    onFirstBytes,
  );
  if ("error" in sniffed) return fail(sniffed.error);
  if (!sniffed.hello) return { state: "NOT_UBRING", conn: tcp, history: [] };
  const { magic, reader } = sniffed;
  let remote: UbringHello;
  try {
    const h = await readHello(reader, magic, "client hello");
    if (typeof h === "string") return fail(h);
    remote = h;
  } catch (e) {
    return fail(msg(e));
  }
  const size = objectBytes(options);
  let why = versionRefusal(remote);
  let helper: Helper | null = null;
  if (why === null) {
    const bad = nameRefusal(remote, tcp.remoteAddress) ??
      sizeRefusal(remote.len, "the client's object size (hello len)");
    if (bad !== null) return fail(bad);
    const h = await ringHelper();
    if (typeof h === "string") why = h;
    else helper = h;
  }
  if (why === null) {
    m.to("S_ALLOC_SHM");
    try {
      held.peer = await openPeerObject(remote.name!, remote.len);
      held.own = await createOwnObject(serverObjectName(remote.name!), size);
      serverInit(held.own.bytes, held.peer.bytes);
    } catch (e) {
      if (e instanceof VerbusError && e.code === "BOUNDS") return fail(msg(e)); // a lying len
      why = `${
        held.peer === null ? "cannot map the client's object" : "cannot create this side's object"
      }: ${msg(e)}`;
      held.release();
    }
  }
  m.to("S_HELLO_SEND");
  const hello = held.own !== null
    ? { msgLen: HELLO_LEN, helloVer: HELLO_VER, implVer: IMPL_VER, len: size, name: remote.name }
    : FALLBACK_HELLO;
  if (!tcp.write(encodeHello(hello))) return fail("the connection closed before the hello");
  m.to("S_ACK_WAIT");
  let ack: Uint8Array;
  try {
    ack = await reader.read(ACK_LEN, "ACK");
  } catch (e) {
    return fail(msg(e));
  }
  const left = reader.reader.release();
  held.own?.unlink();
  if (!ackSaysRing(ack)) {
    held.release();
    tcp.unread(left);
    m.to("FALLBACK_TCP", why ?? "the client's ACK says TCP");
    return outcome(m, tcp);
  }
  if (held.own === null || held.peer === null) {
    return fail(`the client's ACK asks for the ring, but this side fell back: ${why}`);
  }
  if (left.length > 0) return fail(`${left.length} unexpected byte(s) after the ACK`);
  const conn = new BrpcUbringConn(tcp, held.own, held.peer, helper!, options, log);
  m.to("ESTABLISHED");
  return outcome(m, conn);
}
