/**
 * The steps brpc's TCP-borne handshakes (RDMA: `transport/brpc_rdma/handshake.ts`, UBRing:
 * `transport/brpc_ubring/handshake.ts`) take alike around their own hello: how an ending is
 * reported, the server's sniff of a fresh connection's first bytes (a hello's magic, or a plain
 * baidu_std peer whose bytes are put back), and the client's wait for the server's hello (a
 * server without the mode closes on the hello or answers something else).
 *
 * Control path (allocates, awaits). Threading: the connection's JS thread.
 * @module
 */
import type { StateMachine, Transition } from "../../util/state_machine.ts";
import type { TcpConn } from "./tcp.ts";
import { errorLine, TimedReader } from "./timed_reader.ts";

/** Where a handshake's machine ended: its state, the last transition's reason, every transition. */
export function ending<S extends string>(
  m: StateMachine<S>,
): { state: S; reason?: string; history: readonly Transition<S>[] } {
  return { state: m.state, reason: m.history.at(-1)?.reason, history: m.history };
}

/** What the server's sniff found: a hello's magic (read on with `reader`), a plain peer, or nothing. */
export type Sniffed =
  | { readonly hello: true; readonly magic: Uint8Array; readonly reader: TimedReader }
  | { readonly hello: false }
  | { readonly error: string };

/**
 * The server's first step: waits (up to `sniffTimeoutMs`, 0 = no limit) for the first bytes, as
 * many as `shape`'s magic, and calls `onFirstBytes` once they came. A hello's magic gives
 * the reader, its deadline now `handshakeTimeoutMs` away; anything else is a plain baidu_std
 * peer, its bytes put back on `tcp`; no bytes (closed, or the sniff timed out) is an error.
 */
export async function sniffHello(
  tcp: TcpConn,
  shape: Pick<HelloShape<unknown>, "magicLen" | "isMagic">,
  sniffTimeoutMs: number,
  handshakeTimeoutMs: number,
  onFirstBytes?: () => void,
): Promise<Sniffed> {
  const reader = new TimedReader(tcp, sniffTimeoutMs > 0 ? Date.now() + sniffTimeoutMs : Infinity);
  let magic: Uint8Array;
  try {
    magic = await reader.read(shape.magicLen, "first bytes");
  } catch (e) {
    return { error: errorLine(e) };
  }
  onFirstBytes?.();
  if (!shape.isMagic(magic)) {
    const rest = reader.reader.release();
    if (rest.length > 0) tcp.unread(rest);
    tcp.unread(magic);
    return { hello: false };
  }
  reader.deadline = Date.now() + handshakeTimeoutMs;
  return { hello: true, magic, reader };
}

/** Why the client's wait for the server's hello failed; `notModeServer`: no such mode there. */
export interface HelloRefused {
  readonly reason: string;
  readonly notModeServer: boolean;
}

/** How one handshake's hello looks, for {@link sniffHello} and {@link awaitServerHello}. */
export interface HelloShape<H> {
  /** The mode as said in reasons ("RDMA", "UBRing"). */
  readonly mode: string;
  /** "an RDMA hello", "a UBRing hello". */
  readonly helloName: string;
  readonly magicLen: number;
  isMagic(b: Uint8Array): boolean;
  /** The magic as shown in a reason. */
  show(b: Uint8Array): string;
  /** Reads the rest of the hello after its magic; a string: why it is not one. */
  readRest(r: TimedReader, magic: Uint8Array): Promise<H | string>;
}

/**
 * The client's wait for the server's hello on `r`: the hello, or why not — another answer than
 * a hello, or the connection closed before one, say the server has no such mode
 * (`notModeServer`); a bad hello or the deadline do not.
 */
export async function awaitServerHello<H>(
  r: TimedReader,
  shape: HelloShape<H>,
): Promise<H | HelloRefused> {
  try {
    const magic = await r.read(shape.magicLen, "server hello");
    if (!shape.isMagic(magic)) {
      return {
        reason:
          `the server answered ${shape.show(magic)}, not ${shape.helloName} (no ${shape.mode} ` +
          `mode there?)`,
        notModeServer: true,
      };
    }
    const h = await shape.readRest(r, magic);
    return typeof h === "string" ? { reason: h, notModeServer: false } : h;
  } catch (e) {
    if (r.timedOut) return { reason: errorLine(e), notModeServer: false };
    return {
      reason: `${errorLine(e)} (a server without ${shape.mode} mode closes on the hello)`,
      notModeServer: true,
    };
  }
}

/** Whether {@link awaitServerHello} gave a refusal rather than a hello. */
export function refused<H>(h: H | HelloRefused): h is HelloRefused {
  return typeof h === "object" && h !== null && "notModeServer" in h &&
    typeof (h as HelloRefused).reason === "string";
}
