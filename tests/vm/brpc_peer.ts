/**
 * Test fixture (Soft-RoCE VM): a brpc RDMA server written straight from the protocol
 * description (BRIEF §4 and brpc's rdma_handshake.cpp / rdma_endpoint.cpp) — it imports none of
 * verbus's brpc-RDMA modules, only the raw verbs binding (QP, CQ, MR), TCP, and the baidu_std
 * frame codec for the stream it carries. It checks every field of the client's hello, then
 * answers with its own (a smaller block and smaller queues, so the client's cutting and windows
 * show), brings its QP up against the client's GID/QPN with PSN 0, expects the ACK 0x00000001,
 * and echoes each request. On the data path it checks, for every receive: at most one of its
 * blocks; credits (immediates) never more than it owes; the client never has more data sends
 * outstanding than its window min(client SQ, my RQ) − 3; standalone ACKs only past half the
 * window. It can withhold credits (`holdCredits`) so the client's window runs dry. The same
 * session code also plays a brpc client (`client()`) against a verbus server.
 */
import { IBV_ACCESS, IBV_WR } from "../../ffi/symbols/libibverbs.ts";
import { VB_RECV_DESC, VB_SGE } from "../../ffi/layouts/helper.ts";
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import { RawReader, tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { openDevice } from "../../transport/verbs/device.ts";
import { directQpSteps } from "../../transport/verbs/qp.ts";
import { loadVerbs } from "../../transport/verbs/verbs_lib.ts";
import { TestBatch, WcReader } from "./verbs_pair.ts";

/** What the peer announces and how it behaves. */
export interface PeerConfig {
  blockSize: number;
  sqSize: number;
  rqSize: number;
  /** Return no credit until the client's window is used up (then all at once). */
  holdCredits: boolean;
  /**
   * Wait as brpc does: sleep on a completion channel armed for SOLICITED completions only. A
   * receive found after a wait that timed out is a violation (the sender did not solicit it).
   */
  solicitedEvents?: boolean;
  /**
   * First connection only: on this request, move my QP to ERR and close the TCP connection (a
   * dying brpc process), never answering. (With the TCP connection left open, rxe retries the
   * client's next send forever instead of failing it after retry_cnt: measured, not used here.)
   */
  errorAfterFrames?: number;
}

/** What the peer saw (the test asserts on it). */
export interface PeerLog {
  hello: Record<string, number | string>;
  ack: string;
  receives: number;
  maxRecvLen: number;
  /** Most client data sends outstanding (received, credit not yet returned) at once. */
  maxOutstanding: number;
  /** Immediates of the client's zero-length receives (its standalone ACKs). */
  ackImms: number[];
  /** The client's standalone ACKs must carry more than this (half of my sends' window). */
  ackAbove: number;
  /** Credits the client returned in all. */
  creditsIn: number;
  violations: string[];
  frames: number;
}

const RECV_BASE = 1_000_000;

/** Starts the peer on `host` (rxe1's address); one connection at a time. */
export async function startBrpcPeer(host: string, device: string, cfg: PeerConfig) {
  const v = await loadVerbs();
  const ctx = openDevice(v, device);
  const gidIndex = (() => {
    const want = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...host.split(".").map(Number)];
    for (let i = 0; i < ctx.queryPort(1).gidTblLen; i++) {
      try {
        if (ctx.queryGid(1, i).every((x, k) => x === want[k])) return i;
      } catch { /* empty */ }
    }
    throw new Error(`no GID for ${host} on ${device}`);
  })();
  const logs: PeerLog[] = [];
  const listener = await tcp.listen({
    host,
    port: 0,
    onConnection: (c) =>
      void session(c, "server", []).catch((e) => logs.at(-1)?.violations.push(String(e))),
  });

  /**
   * One connection. Server role: read the hello, bring the QP up, answer, read the ACK, echo
   * every request. Client role: send the hello, read the answer, bring up, ACK, send `requests`
   * and wait for their answers (checked against them).
   */
  async function session(conn: TcpConn, role: "server" | "client", requests: Uint8Array[]) {
    const log: PeerLog = {
      hello: {},
      ack: "",
      receives: 0,
      maxRecvLen: 0,
      maxOutstanding: 0,
      ackImms: [],
      ackAbove: 0,
      creditsIn: 0,
      violations: [],
      frames: 0,
    };
    logs.push(log);
    const r = new RawReader(conn);
    // My resources first (the hello carries the QP number): a QP, one CQ, rq receive blocks.
    const pd = ctx.allocPd();
    const channel = cfg.solicitedEvents ? ctx.createCompChannel() : null;
    const cq = ctx.createCq(256, channel);
    const qp = pd.createQp({
      sendCq: cq,
      recvCq: cq,
      maxSendWr: cfg.sqSize,
      maxRecvWr: cfg.rqSize,
      maxSendSge: 1,
    });
    const mine = new Uint8Array(40);
    const m = new DataView(mine.buffer);
    mine.set([0x52, 0x44, 0x4d, 0x41]);
    m.setUint16(4, 40);
    m.setUint16(6, 2);
    m.setUint16(8, 1);
    m.setUint32(10, cfg.blockSize);
    m.setUint16(14, cfg.sqSize);
    m.setUint16(16, cfg.rqSize);
    m.setUint16(18, 0);
    mine.set(ctx.queryGid(1, gidIndex), 20);
    m.setUint32(36, qp.qpNum);
    if (role === "client") conn.write(mine);
    const h = await r.read(40);
    const d = new DataView(h.buffer);
    log.hello = {
      magic: new TextDecoder().decode(h.subarray(0, 4)),
      msgLen: d.getUint16(4),
      helloVer: d.getUint16(6),
      implVer: d.getUint16(8),
      blockSize: d.getUint32(10),
      sqSize: d.getUint16(14),
      rqSize: d.getUint16(16),
      lid: d.getUint16(18),
      gid: Array.from(h.subarray(20, 36)).join("."),
      qpNum: d.getUint32(36),
    };
    const remote = log.hello as {
      blockSize: number;
      sqSize: number;
      rqSize: number;
      qpNum: number;
    };
    // Send buffers of the peer's block size.
    const recvBuf = new Uint8Array(cfg.rqSize * cfg.blockSize);
    const rmr = pd.registerBuffer(recvBuf, IBV_ACCESS.LOCAL_WRITE);
    const sendBuf = new Uint8Array(cfg.sqSize * remote.blockSize);
    const smr = pd.registerBuffer(sendBuf, IBV_ACCESS.LOCAL_WRITE);
    const rdesc = new Uint8Array(VB_RECV_DESC.$size), rsge = new Uint8Array(VB_SGE.$size);
    const bad = new Uint32Array(1);
    const post = (block: number) => {
      const dd = new DataView(rdesc.buffer), s = new DataView(rsge.buffer);
      dd.setBigUint64(VB_RECV_DESC.wr_id, BigInt(RECV_BASE + block), true);
      dd.setUint32(VB_RECV_DESC.num_sge, 1, true);
      s.setBigUint64(VB_SGE.addr, rmr.addr + BigInt(block * cfg.blockSize), true);
      s.setUint32(VB_SGE.length, cfg.blockSize, true);
      s.setUint32(VB_SGE.lkey, rmr.lkey, true);
      const rc = qp.postRecv(rdesc, rsge, 1, bad);
      if (rc !== 0) throw new Error(`peer post_recv: ${rc}`);
    };
    const clientGid = Uint8Array.from(log.hello.gid.toString().split(".").map(Number));
    qp.bringUp(directQpSteps({
      remote: { qpNum: remote.qpNum, psn: 0, gid: clientGid, lid: 0 },
      port: 1,
      sgidIndex: gidIndex,
      psn: 0,
      access: IBV_ACCESS.REMOTE_WRITE,
    }));
    for (let b = 0; b < cfg.rqSize; b++) post(b); // before my hello / ACK: the peer may send at once
    if (role === "server") {
      conn.write(mine);
      const ack = await r.read(4);
      log.ack = Array.from(ack, (x) => x.toString(16).padStart(2, "0")).join("");
    } else conn.write(Uint8Array.of(0, 0, 0, 1));
    r.release();

    // The data path, by the description.
    const clientWindow = Math.min(remote.sqSize, cfg.rqSize) - 3; // the client's sends to me
    const myWindow = Math.min(cfg.sqSize, remote.rqSize) - 3; // my sends to the client
    const ackThreshold = Math.floor(clientWindow / 2); // my standalone ACKs: past half my RQ window
    log.ackAbove = Math.floor(myWindow / 2);
    let outstanding = 0; // client data sends received, credit not yet returned
    let myCredits = myWindow; // client receives I may use
    let inFlight = 0; // my sends not completed
    let wrSeq = 1;
    const out: Uint8Array[] = [];
    const batch = new TestBatch(8, 8);
    const wc = new WcReader(32);
    const sendOne = (data: Uint8Array, imm: number) => {
      const slot = wrSeq % cfg.sqSize;
      sendBuf.set(data, slot * remote.blockSize);
      batch.reset();
      batch.add(
        2 | 4,
        IBV_WR.SEND_WITH_IMM,
        wrSeq++,
        0,
        0,
        imm,
        data.length ? [[smr.address + slot * remote.blockSize, data.length, smr.lkey]] : [],
      );
      const rc = batch.post(qp);
      if (rc !== 0) log.violations.push(`peer post_send: ${rc}`);
      inFlight++;
    };
    let broken = false;
    const cut = (frame: Uint8Array) => {
      for (let o = 0; o < frame.length; o += remote.blockSize) {
        out.push(frame.subarray(o, o + remote.blockSize));
      }
    };
    let done = false;
    const parser = new FrameParser((meta, payload, attachment) => {
      log.frames++;
      if (role === "server" && logs.length === 1 && log.frames === cfg.errorAfterFrames) {
        broken = true;
        qp.toError(); // this request is never answered; the QP is dead…
        conn.close(); // …and the TCP connection goes with it, as when a brpc process dies
        return;
      }
      if (broken) return;
      if (role === "client") {
        const want = requests[Number(meta.correlationId) - 1];
        if (!want || want.length !== payload.length || want.some((x, k) => x !== payload[k])) {
          log.violations.push(`answer ${meta.correlationId} differs from its request`);
        }
        if (log.frames === requests.length) done = true;
        return;
      }
      const frame = encodeFrame(
        { correlationId: meta.correlationId, attachmentSize: attachment.length },
        payload,
        attachment,
      );
      cut(frame);
    });
    requests.forEach((req, i) =>
      cut(
        encodeFrame({
          request: { serviceName: "t.Verbs", methodName: "Echo" },
          correlationId: i + 1,
        }, req),
      )
    );
    const flush = () => {
      while (out.length > 0 && myCredits > 0 && inFlight < cfg.sqSize - 3) {
        const give = cfg.holdCredits && outstanding < clientWindow ? 0 : outstanding;
        outstanding -= give;
        myCredits--;
        sendOne(out.shift()!, give);
      }
      const give = cfg.holdCredits && outstanding < clientWindow ? 0 : outstanding;
      if (give > ackThreshold && inFlight < cfg.sqSize) {
        outstanding -= give;
        sendOne(new Uint8Array(0), give);
      }
    };
    conn.onClose(() => void (done = true));
    conn.onData(() => log.violations.push("bytes on the TCP connection after the ACK"));
    /** Handles the `n` completions just polled; returns how many were receives. */
    const handle = (n: number): number => {
      let recvs = 0;
      for (let i = 0; i < n; i++) {
        const id = wc.wrId(i);
        if (wc.status(i) !== 0) {
          if (broken) continue; // my QP is in ERR on purpose: flushed work; TCP stays open
          log.violations.push(`completion status ${wc.status(i)} (wr ${id})`);
          done = true;
          break;
        }
        if (id < RECV_BASE) {
          inFlight--;
          continue;
        }
        recvs++;
        const len = wc.byteLen(i), imm = wc.imm(i);
        if (imm > 0) {
          log.creditsIn += imm;
          myCredits += imm;
          if (myCredits > myWindow) {
            log.violations.push(`credits ${myCredits} > window ${myWindow}`);
          }
        }
        const block = id - RECV_BASE;
        if (len === 0) log.ackImms.push(imm);
        else {
          log.receives++;
          log.maxRecvLen = Math.max(log.maxRecvLen, len);
          if (len > cfg.blockSize) {
            log.violations.push(`receive of ${len} > block ${cfg.blockSize}`);
          }
          outstanding++;
          log.maxOutstanding = Math.max(log.maxOutstanding, outstanding);
          if (outstanding > clientWindow) {
            log.violations.push(`client has ${outstanding} sends out, window ${clientWindow}`);
          }
          parser.push(recvBuf.slice(block * cfg.blockSize, block * cfg.blockSize + len));
        }
        post(block);
      }
      return recvs;
    };
    while (!done) {
      const n = wc.poll(cq);
      handle(n);
      flush();
      if (n > 0 || done) continue;
      if (channel === null) {
        await new Promise((res) => setTimeout(res, 0));
        continue;
      }
      // As brpc: arm for solicited completions, look once more (what completed before the arm
      // raises no event), then sleep. A receive found only after the sleep timed out was never
      // solicited: a sender that does not set SOLICITED would stall a brpc receiver.
      cq.reqNotify(true);
      const m = wc.poll(cq);
      if (m > 0) {
        handle(m);
        flush();
        continue;
      }
      if (await channel.waitEvent(1500)) continue;
      const late = wc.poll(cq);
      if (handle(late) > 0) log.violations.push("receives completed without a solicited event");
      flush();
    }
    if (role === "client") conn.close();
    pd.close();
    cq.close();
    channel?.close();
    return log;
  }

  return {
    port: listener.port,
    logs,
    /** Plays a brpc client against the server at `host:port` (one connection). */
    async client(host: string, port: number, requests: Uint8Array[]): Promise<PeerLog> {
      const conn = await tcp.connect({ host, port });
      return await session(conn, "client", requests);
    },
    close() {
      listener.close();
      ctx.close();
    },
  };
}
