/**
 * brpc's RDMA handshake messages (apache/brpc `src/brpc/rdma/`, handshake v2), encoded and
 * checked here and nowhere else. All fields big-endian; the GID is 16 raw bytes, never swapped.
 * ```
 *  0      4        6          8         10            14        16        18    20        36      40
 *  +------+--------+----------+---------+-------------+---------+---------+-----+---------+-------+
 *  |"RDMA"|msg_len |hello_ver |impl_ver |block_size   |sq_size  |rq_size  |lid  |gid[16]  |qp_num |
 *  |      |u16 =40 |u16 = 2   |u16 = 1  |u32          |u16      |u16      |u16  |raw      |u32    |
 *  +------+--------+----------+---------+-------------+---------+---------+-----+---------+-------+
 * ```
 * `msg_len` may announce up to {@link HELLO_MAX_LEN} bytes: what follows the 40 base bytes is an
 * extension v2 ignores (read and dropped). A hello whose versions are not (2, 1) — brpc answers
 * with all-zero fields when it cannot do RDMA — or whose sizes are below brpc's minimums means
 * "stay on TCP". After its QP reached RTS the client sends the 4-byte big-endian ACK: bit 0
 * ({@link ACK_RDMA_OK}) set = use RDMA, clear = both stay on TCP.
 *
 * Pure functions, any thread. Decoding allocates one small object per hello (control path).
 * @module
 */

/** The magic of a v2 hello, as bytes. */
export const HELLO_MAGIC = Uint8Array.of(0x52, 0x44, 0x4d, 0x41); // "RDMA"
/** Bytes of a base v2 hello (magic included). */
export const HELLO_LEN = 40;
/** Largest `msg_len` brpc accepts; a longer one is a protocol error. */
export const HELLO_MAX_LEN = 4096;
/** `hello_ver` and `impl_ver` of a v2 hello that wants RDMA. */
export const HELLO_VER = 2, IMPL_VER = 1;
/** brpc's minimum block size and queue sizes (smaller = the peer cannot do RDMA with us). */
export const MIN_BLOCK_SIZE = 1024, MIN_QP_SIZE = 16;
/** Bytes of the ACK, and its "RDMA OK" flag. */
export const ACK_LEN = 4, ACK_RDMA_OK = 0x1;
/** Work requests each side keeps out of its window for standalone ACKs (brpc: RESERVED_WR_NUM). */
export const RESERVED_WRS = 3;

/** The fields of a hello (the magic and `msg_len` are implied). */
export interface BrpcHello {
  helloVer: number;
  implVer: number;
  /** Largest message (bytes) one receive of the sender holds: the peer's SENDs stay within it. */
  blockSize: number;
  sqSize: number;
  rqSize: number;
  lid: number;
  /** 16 raw bytes. */
  gid: Uint8Array;
  qpNum: number;
}

/** The hello that says "no RDMA here" (all fields zero, as brpc sends it). */
export const FALLBACK_HELLO: Readonly<BrpcHello> = Object.freeze({
  helloVer: 0,
  implVer: 0,
  blockSize: 0,
  sqSize: 0,
  rqSize: 0,
  lid: 0,
  gid: new Uint8Array(16),
  qpNum: 0,
});

/** This side's hello for a QP brought to INIT: its sizes, address and number. */
export function helloFor(
  qp: {
    blockSize: number;
    sqSize: number;
    rqSize: number;
    lid: number;
    gid: Uint8Array;
    qpNum: number;
  },
): BrpcHello {
  return {
    helloVer: HELLO_VER,
    implVer: IMPL_VER,
    blockSize: qp.blockSize,
    sqSize: qp.sqSize,
    rqSize: qp.rqSize,
    lid: qp.lid,
    gid: qp.gid,
    qpNum: qp.qpNum,
  };
}

/** Encodes `h` as a 40-byte v2 hello (a fresh buffer). Throws RangeError on out-of-range fields. */
export function encodeHello(h: BrpcHello): Uint8Array {
  const u16 = (n: number, what: string) => {
    if (!Number.isInteger(n) || n < 0 || n > 0xffff) {
      throw new RangeError(`${what}: ${n} is not a u16`);
    }
    return n;
  };
  if (!Number.isInteger(h.blockSize) || h.blockSize < 0 || h.blockSize > 0xffffffff) {
    throw new RangeError(`block_size: ${h.blockSize} is not a u32`);
  }
  if (!Number.isInteger(h.qpNum) || h.qpNum < 0 || h.qpNum > 0xffffffff) {
    throw new RangeError(`qp_num: ${h.qpNum} is not a u32`);
  }
  if (h.gid.length !== 16) throw new RangeError(`gid: ${h.gid.length} bytes, expected 16`);
  const b = new Uint8Array(HELLO_LEN);
  const d = new DataView(b.buffer);
  b.set(HELLO_MAGIC, 0);
  d.setUint16(4, HELLO_LEN);
  d.setUint16(6, u16(h.helloVer, "hello_ver"));
  d.setUint16(8, u16(h.implVer, "impl_ver"));
  d.setUint32(10, h.blockSize);
  d.setUint16(14, u16(h.sqSize, "sq_size"));
  d.setUint16(16, u16(h.rqSize, "rq_size"));
  d.setUint16(18, u16(h.lid, "lid"));
  b.set(h.gid, 20);
  d.setUint32(36, h.qpNum);
  return b;
}

/** True when the first 4 bytes of `b` are the v2 magic "RDMA". */
export function isHelloMagic(b: Uint8Array): boolean {
  return b.length >= 4 && b[0] === 0x52 && b[1] === 0x44 && b[2] === 0x4d && b[3] === 0x41;
}

/** Printable form of the first bytes of a wrong magic (`"PRPC"` or hex). */
export function showMagic(b: Uint8Array): string {
  const s = b.subarray(0, 4);
  return s.every((c) => c >= 0x20 && c < 0x7f)
    ? JSON.stringify(String.fromCharCode(...s))
    : `0x${Array.from(s, (c) => c.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * `msg_len` of a hello header (the first 6 bytes: magic + msg_len), or a reason string when it
 * is out of bounds (a protocol error: the connection fails).
 */
export function helloLength(header: Uint8Array): number | string {
  const n = (header[4] << 8) | header[5];
  if (n < HELLO_LEN) return `hello msg_len ${n} is below ${HELLO_LEN}`;
  if (n > HELLO_MAX_LEN) return `hello msg_len ${n} is above ${HELLO_MAX_LEN}`;
  return n;
}

/** Decodes the 40 base bytes of a hello (magic and `msg_len` already checked). */
export function decodeHello(b: Uint8Array): BrpcHello {
  const d = new DataView(b.buffer, b.byteOffset, HELLO_LEN);
  return {
    helloVer: d.getUint16(6),
    implVer: d.getUint16(8),
    blockSize: d.getUint32(10),
    sqSize: d.getUint16(14),
    rqSize: d.getUint16(16),
    lid: d.getUint16(18),
    gid: b.slice(20, 36),
    qpNum: d.getUint32(36),
  };
}

/**
 * Why a decoded hello does not open RDMA (null: it does). brpc's own rules — versions (2, 1),
 * block size ≥ 1024, SQ and RQ ≥ 16 — plus two of verbus's: a QP number must be a 24-bit
 * non-zero number and the GID must not be all zero (a peer announcing either cannot be reached).
 */
export function helloRefusal(h: BrpcHello): string | null {
  if (h.helloVer === 0 && h.implVer === 0) {
    return "the peer answered zeroed versions (no RDMA on its side)";
  }
  if (h.helloVer !== HELLO_VER || h.implVer !== IMPL_VER) {
    return `unsupported hello_ver ${h.helloVer} / impl_ver ${h.implVer} (want ${HELLO_VER} / ${IMPL_VER})`;
  }
  if (h.blockSize < MIN_BLOCK_SIZE) return `block_size ${h.blockSize} is below ${MIN_BLOCK_SIZE}`;
  if (h.sqSize < MIN_QP_SIZE) return `sq_size ${h.sqSize} is below ${MIN_QP_SIZE}`;
  if (h.rqSize < MIN_QP_SIZE) return `rq_size ${h.rqSize} is below ${MIN_QP_SIZE}`;
  if (h.qpNum === 0 || h.qpNum > 0xffffff) return `qp_num ${h.qpNum} is not a QP number`;
  if (h.gid.every((x) => x === 0)) return "the GID is all zero";
  return null;
}

/** The 4-byte ACK. */
export function encodeAck(rdmaOk: boolean): Uint8Array {
  return Uint8Array.of(0, 0, 0, rdmaOk ? ACK_RDMA_OK : 0);
}

/** Whether an ACK says "RDMA OK". */
export function ackSaysRdma(b: Uint8Array): boolean {
  return (new DataView(b.buffer, b.byteOffset, 4).getUint32(0) & ACK_RDMA_OK) !== 0;
}
