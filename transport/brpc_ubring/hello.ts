/**
 * brpc UBRing's hello and ACK codec (layout.ts has the format), and the checks a received hello
 * must pass. Every value read from the peer is checked here, so a lying hello becomes a reason
 * string, never an exception or an out-of-range size. Pure; any thread.
 * @module
 */
import {
  ACK_LEN,
  ACK_UB_OK,
  ALLOC_UNIT,
  CLIENT_SUFFIX,
  HELLO,
  HELLO_LEN,
  HELLO_MAGIC,
  HELLO_VER,
  IMPL_VER,
  NAME_FIELD,
  NAME_PREFIX,
  SERVER_SUFFIX,
} from "./layout.ts";

/** A hello's fields. */
export interface UbringHello {
  msgLen: number;
  helloVer: number;
  implVer: number;
  /** Bytes of the sender's shm object. */
  len: number;
  /** The client's object name (the server echoes it); null when the field is not a name. */
  name: string | null;
  /** Why the name field is not a name (null: it is). Only an error when the ring is used. */
  nameProblem?: string | null;
}

/** Largest object a peer may announce (1 GiB): more is a lying hello. */
export const MAX_OBJECT_BYTES = 1 << 30;

/** Whether `b` (2 bytes) is the hello magic "UB". */
export function isHelloMagic(b: Uint8Array): boolean {
  return b.length >= 2 && b[0] === HELLO_MAGIC.charCodeAt(0) && b[1] === HELLO_MAGIC.charCodeAt(1);
}

/** Encodes a 64-byte hello (a new buffer, owned by the caller). */
export function encodeHello(h: UbringHello): Uint8Array {
  const out = new Uint8Array(HELLO_LEN);
  const v = new DataView(out.buffer);
  if (h.name === null) throw new RangeError("a hello to send needs a name");
  out[0] = HELLO_MAGIC.charCodeAt(0);
  out[1] = HELLO_MAGIC.charCodeAt(1);
  v.setUint16(HELLO.MSG_LEN, h.msgLen);
  v.setUint16(HELLO.HELLO_VER, h.helloVer);
  v.setUint16(HELLO.IMPL_VER, h.implVer);
  v.setBigUint64(HELLO.LEN, BigInt(h.len));
  const name = new TextEncoder().encode(h.name);
  out.set(name.subarray(0, NAME_FIELD - 1), HELLO.NAME);
  return out;
}

/** The hello a side sends to refuse the ring: zeroed versions, length and name. */
export const FALLBACK_HELLO: UbringHello = {
  msgLen: HELLO_LEN,
  helloVer: 0,
  implVer: 0,
  len: 0,
  name: "",
};

/**
 * Decodes a 64-byte hello (magic included). Returns a reason string when msg_len is below 64
 * (brpc fails the handshake then). A name field with no NUL in its 48 bytes, or with bytes
 * outside printable ASCII, gives `name: null` and the reason in `nameProblem` (a refusing brpc
 * server leaves its length and name uninitialised, so they only matter when the ring is used);
 * a length past 2^53 reads as Infinity (refused by {@link sizeRefusal}).
 */
export function decodeHello(b: Uint8Array): UbringHello | string {
  if (b.length < HELLO_LEN) return `a hello of ${b.length} bytes (need ${HELLO_LEN})`;
  const v = new DataView(b.buffer, b.byteOffset, HELLO_LEN);
  const msgLen = v.getUint16(HELLO.MSG_LEN);
  if (msgLen < HELLO_LEN) return `hello msg_len ${msgLen} is below ${HELLO_LEN}`;
  const big = v.getBigUint64(HELLO.LEN);
  const field = b.subarray(HELLO.NAME, HELLO.NAME + NAME_FIELD);
  const end = field.indexOf(0);
  let nameProblem: string | null = end < 0
    ? `hello shm_name has no NUL in its ${NAME_FIELD} bytes`
    : end === 0
    ? "hello shm_name is empty"
    : null;
  for (let i = 0; i < end && nameProblem === null; i++) {
    if (field[i] < 0x21 || field[i] > 0x7e) {
      nameProblem = `hello shm_name has byte 0x${
        field[i].toString(16)
      } at ${i} (not printable ASCII)`;
    }
  }
  return {
    msgLen,
    helloVer: v.getUint16(HELLO.HELLO_VER),
    implVer: v.getUint16(HELLO.IMPL_VER),
    len: big > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(big),
    name: nameProblem === null ? new TextDecoder().decode(field.subarray(0, end)) : null,
    nameProblem,
  };
}

/** Why the versions refuse the ring (null: they are brpc's 2/1). Not a protocol error. */
export function versionRefusal(h: UbringHello): string | null {
  if (h.helloVer === HELLO_VER && h.implVer === IMPL_VER) return null;
  if (h.helloVer === 0 && h.implVer === 0) return "the peer refused the ring (zeroed versions)";
  return `the peer speaks hello_ver ${h.helloVer} / impl_ver ${h.implVer}, not ${HELLO_VER}/${IMPL_VER}`;
}

/** Why an announced object size is not one (null: fine). */
export function sizeRefusal(len: number, what: string): string | null {
  if (len < ALLOC_UNIT || len % ALLOC_UNIT !== 0 || len > MAX_OBJECT_BYTES) {
    return `${what} ${len} is not a multiple of ${ALLOC_UNIT} between ${ALLOC_UNIT} and ${MAX_OBJECT_BYTES}`;
  }
  return null;
}

/** brpc's `endpoint2str`: `a.b.c.d:port`, `[v6]:port`; an IPv4-mapped IPv6 host as IPv4. */
export function endpointText(host: string, port: number): string {
  const h = host.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1");
  return h.includes(":") ? `[${h}]:${port}` : `${h}:${port}`;
}

/** The client's object name for its TCP local address. */
export function clientObjectName(local: { host: string; port: number }): string {
  return `${NAME_PREFIX}${endpointText(local.host, local.port)}${CLIENT_SUFFIX}`;
}

/** The server's object name: the client's with its last `_…` replaced by `_S` (as brpc builds it). */
export function serverObjectName(clientName: string): string {
  const cut = clientName.lastIndexOf("_");
  return `${cut < 0 ? clientName : clientName.slice(0, cut)}${SERVER_SUFFIX}`;
}

/**
 * Why the name in a client's hello is not the one its TCP address gives (null: it is). A server
 * opens and writes the object named, so a name other than `UBRING_<client ip:port>_C` (another
 * connection's object, anything in /dev/shm) is refused.
 */
export function nameRefusal(h: UbringHello, peer: { host: string; port: number }): string | null {
  if (h.name === null) return h.nameProblem ?? "hello shm_name is not a name";
  const name = h.name;
  const want = clientObjectName(peer);
  if (name === want) return null;
  return `the hello names shm object "${name}", but the client at ${
    endpointText(peer.host, peer.port)
  } ` +
    `must name "${want}"`;
}

/** Encodes the ACK. */
export function encodeAck(useRing: boolean): Uint8Array {
  const out = new Uint8Array(ACK_LEN);
  new DataView(out.buffer).setUint32(0, useRing ? ACK_UB_OK : 0);
  return out;
}

/** Whether an ACK asks for the ring. */
export function ackSaysRing(b: Uint8Array): boolean {
  return (new DataView(b.buffer, b.byteOffset, ACK_LEN).getUint32(0) & ACK_UB_OK) !== 0;
}

/** Printable form of unexpected first bytes. */
export function showBytes(b: Uint8Array): string {
  return JSON.stringify(String.fromCharCode(...b)) +
    ` (0x${[...b].map((x) => x.toString(16).padStart(2, "0")).join("")})`;
}
