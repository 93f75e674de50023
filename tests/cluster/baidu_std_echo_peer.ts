/**
 * A minimal baidu_std server that behaves as a stock brpc `echo_server` does on the wire, for the
 * mixed-fleet tests (no brpc in CI): it serves `example.EchoService/Echo` only (the response is the
 * request, its attachment copied back) and refuses anything else as brpc master does
 * (`baidu_rpc_protocol.cpp`): a service name without a dot that it does not have with ENOSERVICE
 * 1001, any other unknown `service/method` with ENOMETHOD 1002 "Fail to find method=S/M" — so
 * verbus's `verbus.Fabric/Hello` gets ENOMETHOD and the client stays on TCP. With `silent`, a call
 * to anything but Echo is read and never answered (a peer that ignores the handshake instead of
 * refusing it).
 *
 * Written from the protocol (a 12-byte header `PRPC`, body size, meta size, big-endian; then the
 * `RpcMeta` protobuf, the payload, the attachment) with @bufbuild/protobuf's wire reader and
 * writer — none of verbus's frame code, so the tests check verbus against an independent peer.
 * Sockets come from verbus's TCP transport (plain sockets on both runtimes).
 *
 * Threading: the test's JS thread.
 * @module
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { tcp, type TcpConn, type TcpListener } from "../../transport/tcp/mod.ts";

const MAGIC = [0x50, 0x52, 0x50, 0x43]; // "PRPC"
const ENOSERVICE = 1001, ENOMETHOD = 1002;

/** The peer; see the module documentation. */
export interface BaiduStdEchoPeer {
  readonly port: number;
  /** `service/method` of every request it read, in order. */
  readonly requests: string[];
  /** Echo calls answered. */
  readonly echoed: number;
  close(): Promise<void>;
}

interface Request {
  service: string;
  method: string;
  correlationId: bigint;
  attachmentSize: number;
}

/** Reads the fields of `RpcMeta` the peer needs (request 1 {service 1, method 2}, id 4, attachment 5). */
function decodeMeta(bytes: Uint8Array): Request {
  const r = new BinaryReader(bytes);
  const out: Request = { service: "", method: "", correlationId: 0n, attachmentSize: 0 };
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1 && wire === WireType.LengthDelimited) {
      const q = new BinaryReader(r.bytes());
      while (q.pos < q.len) {
        const [f, w] = q.tag();
        if (f === 1 && w === WireType.LengthDelimited) out.service = q.string();
        else if (f === 2 && w === WireType.LengthDelimited) out.method = q.string();
        else q.skip(w, f);
      }
    } else if (field === 4 && wire === WireType.Varint) out.correlationId = BigInt(r.int64());
    else if (field === 5 && wire === WireType.Varint) out.attachmentSize = r.int32();
    else r.skip(wire, field);
  }
  return out;
}

/** One answer frame: `RpcMeta { response { error_code, error_text }, correlation_id, attachment_size }`. */
function answerFrame(
  id: bigint,
  errorCode: number,
  errorText: string,
  payload: Uint8Array,
  attachment: Uint8Array,
): Uint8Array {
  const w = new BinaryWriter();
  if (errorCode !== 0) {
    w.tag(2, WireType.LengthDelimited).fork();
    w.tag(1, WireType.Varint).int32(errorCode).tag(2, WireType.LengthDelimited).string(errorText);
    w.join();
  }
  w.tag(4, WireType.Varint).int64(id);
  if (attachment.length > 0) w.tag(5, WireType.Varint).int32(attachment.length);
  const meta = w.finish();
  const frame = new Uint8Array(12 + meta.length + payload.length + attachment.length);
  const view = new DataView(frame.buffer);
  frame.set(MAGIC, 0);
  view.setUint32(4, meta.length + payload.length + attachment.length);
  view.setUint32(8, meta.length);
  frame.set(meta, 12);
  frame.set(payload, 12 + meta.length);
  frame.set(attachment, 12 + meta.length + payload.length);
  return frame;
}

/** Starts the peer on a free loopback port. */
export async function startBaiduStdEchoPeer(
  options: { silent?: boolean } = {},
): Promise<BaiduStdEchoPeer> {
  const requests: string[] = [];
  const conns = new Set<TcpConn>();
  let echoed = 0;
  const serveConn = (conn: TcpConn) => {
    conns.add(conn);
    conn.onClose(() => conns.delete(conn));
    let buf = new Uint8Array(0);
    conn.onData((chunk) => {
      const joined = new Uint8Array(buf.length + chunk.length);
      joined.set(buf);
      joined.set(chunk, buf.length);
      buf = joined;
      while (buf.length >= 12) {
        const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
        if (MAGIC.some((b, i) => buf[i] !== b)) return conn.close(); // not baidu_std: brpc closes
        const body = view.getUint32(4), metaSize = view.getUint32(8);
        if (buf.length < 12 + body) return;
        const meta = decodeMeta(buf.subarray(12, 12 + metaSize));
        const rest = buf.slice(12 + metaSize, 12 + body);
        buf = buf.slice(12 + body);
        requests.push(`${meta.service}/${meta.method}`);
        const payload = rest.subarray(0, rest.length - meta.attachmentSize);
        const attachment = rest.subarray(rest.length - meta.attachmentSize);
        const none = new Uint8Array(0);
        if (meta.service !== "example.EchoService" || meta.method !== "Echo") {
          if (options.silent) continue;
          const [code, text] = meta.service.includes(".")
            ? [ENOMETHOD, `Fail to find method=${meta.service}/${meta.method}`]
            : [ENOSERVICE, `Fail to find service=${meta.service}`];
          conn.write(answerFrame(meta.correlationId, code, text, none, none));
        } else {
          echoed++;
          conn.write(answerFrame(meta.correlationId, 0, "", payload, attachment));
        }
      }
    });
  };
  const listener: TcpListener = await tcp.listen({
    host: "127.0.0.1",
    port: 0,
    onConnection: serveConn,
  });
  return {
    port: listener.port,
    requests,
    get echoed() {
      return echoed;
    },
    close() {
      listener.close();
      for (const c of conns) c.close();
      return Promise.resolve();
    },
  };
}
