/**
 * Test fixture: a brpc UBRing peer written straight from the protocol description (brpc's
 * `ub_endpoint.cpp`, `ub_ring.cpp`, `ubr_trx.h`, `ubr_msg.h`, `shm_ipc.cpp`) — it imports none of
 * verbus's brpc_ubring modules, only named shm objects (transport/shm/shm_object.ts), TCP, and
 * the baidu_std frame codec for the stream it carries. Every field is written out here by offset:
 *
 *   hello (64, big-endian): "UB" | msg_len u16 | hello_ver u16 | impl_ver u16 | len u64 | name[48]
 *   ACK: u32 big-endian, 0x1 = ring
 *   object: TxEventQ{io_id u64, flag i32}@0, RxEventQ@16, DataStatusQ{tail u32, timeout u32,
 *     heart_beat u8}@32, blocks@64 of 64 bytes: payload[60] | flag | len | cur | -
 *
 * It plays a server ({@link startPeerServer}) for verbus clients and a client
 * ({@link peerClient}) of verbus servers, and can lie anywhere: the hello's bytes, the tail it
 * writes, the blocks it writes.
 */
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import { ShmMapping } from "../../transport/shm/shm_object.ts";
import { RawReader, tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";

export const MiB = 1024 * 1024;
const DATA = 64, BLOCK = 64, PAYLOAD = 60;
const TX_FLAG = 8, RX_IO = 16, RX_FLAG = 24, TAIL = 32, TIMEOUT = 36, HB = 40;

/** Hello fields, any of them wrong on purpose. */
export interface HelloFields {
  magic?: string;
  msgLen?: number;
  helloVer?: number;
  implVer?: number;
  len?: bigint;
  /** The name, or raw 48 bytes. */
  name?: string | Uint8Array;
}

/** A hello written field by field. */
export function helloBytes(f: HelloFields): Uint8Array {
  const b = new Uint8Array(64);
  const v = new DataView(b.buffer);
  const m = f.magic ?? "UB";
  b[0] = m.charCodeAt(0);
  b[1] = m.charCodeAt(1);
  v.setUint16(2, f.msgLen ?? 64);
  v.setUint16(4, f.helloVer ?? 2);
  v.setUint16(6, f.implVer ?? 1);
  v.setBigUint64(8, f.len ?? BigInt(4 * MiB));
  const n = typeof f.name === "string"
    ? new TextEncoder().encode(f.name)
    : f.name ?? new Uint8Array(0);
  b.set(n.subarray(0, 48), 16);
  return b;
}

/** A hello read field by field. */
export function readHelloBytes(b: Uint8Array) {
  const v = new DataView(b.buffer, b.byteOffset, 64);
  const field = b.subarray(16, 64);
  const end = field.indexOf(0);
  return {
    magic: String.fromCharCode(b[0], b[1]),
    msgLen: v.getUint16(2),
    helloVer: v.getUint16(4),
    implVer: v.getUint16(6),
    len: v.getBigUint64(8),
    name: new TextDecoder().decode(field.subarray(0, end < 0 ? 48 : end)),
  };
}

const u32 = (o: Uint8Array) => new Uint32Array(o.buffer, o.byteOffset, 16);

/** The peer's side of the rings: its object (`mine`, the peer writes into it) and verbus's. */
export class PeerRings {
  readPos = 0;
  writePos = 0;
  ioId = 0;
  readonly myCap: number;
  readonly theirCap: number;
  constructor(readonly mine: Uint8Array, readonly theirs: Uint8Array) {
    this.myCap = (mine.length - DATA) / BLOCK;
    this.theirCap = (theirs.length - DATA) / BLOCK;
  }
  /** Free blocks in verbus's ring by the tail verbus wrote into mine. */
  free(): number {
    const tail = Atomics.load(u32(this.mine), TAIL / 4), w = this.writePos, cap = this.theirCap;
    return w > tail ? tail + cap - w : tail - w;
  }
  /** Writes `b` whole (false: no room now), in blocks, the last EOF, then bumps io_id. */
  write(b: Uint8Array): boolean {
    const n = Math.ceil(b.length / PAYLOAD);
    if (n === 0) return true;
    if (this.free() < n) return false;
    for (let i = 0; i < n; i++) {
      const k = Math.min(PAYLOAD, b.length - i * PAYLOAD);
      this.rawBlock(i === n - 1 ? 2 : 1, k, 0, b.subarray(i * PAYLOAD, i * PAYLOAD + k));
    }
    Atomics.store(u32(this.theirs), RX_IO / 4, ++this.ioId);
    return true;
  }
  /** One block at the write position, any header (hostile tests). */
  rawBlock(flag: number, len: number, cur: number, payload: Uint8Array = new Uint8Array(0)): void {
    const base = DATA + this.writePos * BLOCK;
    this.theirs.set(payload.subarray(0, PAYLOAD), base);
    this.theirs[base + 61] = len;
    this.theirs[base + 62] = cur;
    Atomics.store(this.theirs, base + 60, flag);
    this.writePos = (this.writePos + 1) % this.theirCap;
  }
  /** What verbus wrote into mine (blocks freed, verbus's tail moved). */
  read(): Uint8Array {
    const parts: Uint8Array[] = [];
    let last = -1;
    for (;;) {
      const base = DATA + this.readPos * BLOCK;
      const flag = Atomics.load(this.mine, base + 60);
      if (flag === 0) break;
      const len = this.mine[base + 61], cur = this.mine[base + 62];
      parts.push(this.mine.slice(base + cur, base + len));
      this.mine[base + 60] = 0;
      last = this.readPos;
      this.readPos = (this.readPos + 1) % this.myCap;
    }
    if (last >= 0) Atomics.store(u32(this.theirs), TAIL / 4, last);
    const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) out.set(p, (o += p.length) - p.length);
    return out;
  }
  /** Writes the tail verbus reads (it lives in verbus's object): verbus's flow control. */
  lieTail(v: number): void {
    Atomics.store(u32(this.theirs), TAIL / 4, v);
  }
  /** The peer closes: CLOSING into verbus's tx flag, CLOSED into verbus's rx flag. */
  close(): void {
    Atomics.store(u32(this.theirs), TX_FLAG / 4, 2);
    Atomics.store(u32(this.mine), TX_FLAG / 4, 3);
    Atomics.store(u32(this.theirs), RX_FLAG / 4, 3);
  }
  /** Verbus's acknowledgement of a close: CLOSED in my rx flag. */
  get closeAcked(): boolean {
    return Atomics.load(u32(this.mine), RX_FLAG / 4) === 3;
  }
  /** The heartbeat verbus set in my object (cleared when read). */
  takeBeat(): boolean {
    const b = Atomics.load(this.mine, HB) === 1;
    Atomics.store(this.mine, HB, 0);
    return b;
  }
}

/** What the peer saw on one connection. */
export interface PeerLog {
  hello?: ReturnType<typeof readHelloBytes>;
  ack?: number;
  frames: number;
  notes: string[];
}

/** How the server peer behaves. */
export interface PeerServerConfig {
  /** Replace fields of its hello. */
  hello?: HelloFields;
  /** The tail it initialises in the client's object (default: its ring's last block). */
  initialTail?: number;
  /** Size of its object (default 4 MiB). */
  bytes?: number;
  /** Called once established, instead of echoing (hostile ring writes). */
  established?: (rings: PeerRings, conn: TcpConn, log: PeerLog) => void;
}

const tick = () => new Promise((r) => setTimeout(r, 1));

/** Echoes baidu_std frames over `rings` until `conn` closes. */
async function echoLoop(rings: PeerRings, conn: TcpConn, log: PeerLog, stopped: () => boolean) {
  let open = true;
  conn.onClose(() => (open = false));
  const out: Uint8Array[] = [];
  const parser = new FrameParser((meta, payload, attachment) => {
    log.frames++;
    out.push(
      encodeFrame(
        { correlationId: meta.correlationId, attachmentSize: attachment.length },
        payload,
        attachment,
      ),
    );
  });
  while (open && !stopped()) {
    const got = rings.read();
    if (got.length > 0) parser.push(got);
    while (out.length > 0 && rings.write(out[0])) out.shift();
    if (rings.closeAcked) log.notes.push("verbus closed its ring");
    await tick();
  }
}

/** Echoes baidu_std frames over the TCP connection (after a fallback). */
function tcpEcho(conn: TcpConn, log: PeerLog, first: Uint8Array): void {
  const parser = new FrameParser((meta, payload, attachment) => {
    log.frames++;
    conn.write(
      encodeFrame(
        { correlationId: meta.correlationId, attachmentSize: attachment.length },
        payload,
        attachment,
      ),
    );
  });
  if (first.length > 0) parser.push(first);
  conn.onData((c) => parser.push(c));
}

/** A UBRing server peer on 127.0.0.1; one behaviour for every connection. */
export async function startPeerServer(cfg: PeerServerConfig = {}) {
  const logs: PeerLog[] = [];
  const objects: ShmMapping[] = [];
  const conns: TcpConn[] = [];
  let stopped = false;
  const listener = await tcp.listen({
    host: "127.0.0.1",
    port: 0,
    onConnection: (conn) => {
      const log: PeerLog = { frames: 0, notes: [] };
      logs.push(log);
      void (async () => {
        const r = new RawReader(conn);
        const h = readHelloBytes(await r.read(64));
        log.hello = h;
        const theirs = await ShmMapping.open(h.name, Number(h.len));
        const mine = await ShmMapping.create(h.name.replace(/_C$/, "_S"), cfg.bytes ?? 4 * MiB);
        objects.push(theirs, mine);
        const rings = new PeerRings(mine.bytes, theirs.bytes);
        Atomics.store(u32(mine.bytes), TAIL / 4, rings.theirCap - 1);
        Atomics.store(u32(mine.bytes), TIMEOUT / 4, 1);
        Atomics.store(u32(theirs.bytes), TAIL / 4, cfg.initialTail ?? rings.myCap - 1);
        Atomics.store(u32(theirs.bytes), RX_FLAG / 4, 1);
        Atomics.store(u32(mine.bytes), RX_FLAG / 4, 1);
        conn.write(helloBytes({ len: BigInt(mine.size), name: h.name, ...cfg.hello }));
        const ack = await r.read(4);
        log.ack = new DataView(ack.buffer, ack.byteOffset, 4).getUint32(0);
        mine.unlink();
        const left = r.release();
        if (log.ack === 0) return tcpEcho(conn, log, left);
        if (cfg.established) cfg.established(rings, conn, log);
        else await echoLoop(rings, conn, log, () => stopped);
      })().catch((e) => {
        log.notes.push(`peer: ${e instanceof Error ? e.message : e}`);
        conn.close();
      });
    },
  });
  return {
    port: listener.port,
    logs,
    /** Stops (loops end before the objects are unmapped: nothing touches them after). */
    close: async () => {
      stopped = true;
      listener.close();
      for (const c of conns) c.close();
      await new Promise((r) => setTimeout(r, 20));
      for (const o of objects) {
        o.unlink();
        o.close();
      }
    },
  };
}

/** How the client peer behaves. */
export interface PeerClientConfig {
  /** Replace fields of its hello (the name, say). */
  hello?: HelloFields;
  /** Size of its object (default 4 MiB). */
  bytes?: number;
  /** Object name (default `UBRING_127.0.0.1:<its port>_C`). */
  name?: string;
}

/** A UBRing client peer: the handshake with a verbus server, then its rings (or why not). */
export async function peerClient(port: number, cfg: PeerClientConfig = {}) {
  const conn = await tcp.connect({ host: "127.0.0.1", port });
  const name = cfg.name ?? `UBRING_127.0.0.1:${conn.localAddress.port}_C`;
  const mine = await ShmMapping.create(name, cfg.bytes ?? 4 * MiB);
  Atomics.store(u32(mine.bytes), TIMEOUT / 4, 1);
  const r = new RawReader(conn);
  const release = () => {
    mine.unlink();
    mine.close();
  };
  conn.write(helloBytes({ len: BigInt(mine.size), name, ...cfg.hello }));
  let h: ReturnType<typeof readHelloBytes>;
  try {
    h = readHelloBytes(await r.read(64));
  } catch (e) {
    release();
    return {
      ok: false as const,
      why: `no hello back: ${e instanceof Error ? e.message : e}`,
      conn,
    };
  }
  if (h.helloVer !== 2 || h.implVer !== 1) {
    conn.write(new Uint8Array(4));
    release();
    r.release();
    return { ok: false as const, why: `versions ${h.helloVer}/${h.implVer}`, hello: h, conn };
  }
  const tail = Atomics.load(u32(mine.bytes), TAIL / 4);
  const theirs = await ShmMapping.open(name.replace(/_C$/, "_S"), 64 * (tail + 1) + 64);
  Atomics.store(u32(theirs.bytes), TX_FLAG / 4, 1);
  Atomics.store(u32(mine.bytes), RX_FLAG / 4, 1);
  const ack = new Uint8Array(4);
  ack[3] = 1;
  conn.write(ack);
  r.release();
  mine.unlink();
  const rings = new PeerRings(mine.bytes, theirs.bytes);
  let closed = false;
  conn.onClose(() => (closed = true));
  /** One baidu_std call over the rings, answered within `ms` (null: no answer). */
  const call = async (service: string, method: string, body: Uint8Array, id: number, ms = 3000) => {
    let answer: Uint8Array | null = null;
    const parser = new FrameParser((meta, payload) => {
      if (Number(meta.correlationId) === id) answer = payload;
    });
    const frame = encodeFrame({
      request: { serviceName: service, methodName: method },
      correlationId: id,
    }, body);
    const t0 = Date.now();
    while (!rings.write(frame)) await tick();
    while (answer === null && !closed && Date.now() - t0 < ms) {
      const got = rings.read();
      if (got.length > 0) parser.push(got);
      await tick();
    }
    return answer as Uint8Array | null;
  };
  return {
    ok: true as const,
    hello: h,
    rings,
    conn,
    call,
    get closed() {
      return closed;
    },
    close: () => {
      conn.close();
      theirs.close();
      mine.close();
    },
  };
}
