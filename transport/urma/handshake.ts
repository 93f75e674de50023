/**
 * Control path of the URMA fabric: turns a {@link UrmaPort} into a connected
 * {@link UrmaEndpoint}. Endpoints are born connected:
 *
 * 1. `PreparedUrmaSide.prepare(port, …)` registers the region (+ fabric page) and the aux area,
 *    stamps the region's fabric header with this side's role and the session nonce
 *    (transport/proof.ts) and posts the receives. Nothing is connected yet.
 * 2. Client — `connectToServer(server)`: imports the server's segment, then its jetty (the real
 *    stack requires that order; bound in RC mode), READs the server's fabric header and checks
 *    its stamp, then SENDs its own region segment (SEND_IMM {@link SEGMENT_IMM}, the 48-byte
 *    `urma_seg_t`) so the server can import it.
 *    Server — `acceptClient(client)`: waits for that SEND from the client's jetty (the one in
 *    the hello), checks the segment, imports it and the jetty, READs the client's fabric
 *    header and checks its stamp.
 * 3. Either yields the endpoint, which owns everything from then on. A failure throws HANDSHAKE
 *    naming what failed, after releasing everything; `abort()` releases a side that will not
 *    connect (safe twice, a no-op once connected).
 *
 * The proof: only a process that received this session's offer knows the nonce, and only one
 * that imported the right segment with the right token can read it back where the handshake
 * said it is. Handshake work requests use {@link RESERVED_WR_ID.proof}.
 * Control path: allocates, awaits and throws; one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { URMA_SEG_WIRE_BYTES } from "../../ffi/layouts/urma_abi.ts";
import { URMA_CR_OPC } from "../../ffi/symbols/liburma.ts";
import { fromHex } from "../../util/hex.ts";
import { type RegionRoleCode, ROLE_CLIENT, ROLE_SERVER } from "../control_page.ts";
import { RESERVED_WR_ID } from "../fabric.ts";
import { checkStamp, STAMP_BYTES, stampRegion } from "../proof.ts";
import { type CrReader, URMA_WR_FLAG, UrmaSendBatch } from "./data_path.ts";
import { UrmaEndpoint } from "./endpoint.ts";
import {
  AUX_BOUNCE,
  AUX_HANDSHAKE,
  AUX_RECV,
  AUX_RECV_LEN,
  FABRIC_PAGE,
  SEGMENT_IMM,
} from "./endpoint_config.ts";
import { crStatusName } from "./errors.ts";
import { decodeDescription, describeSegment, peerBlobs } from "./description.ts";
import { EndpointHealth } from "./health.ts";
import type { CompletionSink } from "./hub_binding.ts";
import { type TargetJetty, transModeOf } from "./jetty.ts";
import type { JettyAddress, UrmaPort, UrmaPortParts } from "./port.ts";
import { ReceiveCredits } from "./receive_credits.ts";
import { checkSegment, type ImportedSegment, type Segment } from "./segment.ts";
import { SideResources } from "./side_resources.ts";

/** How a side is prepared. */
export interface PrepareOptions {
  /** Bytes of this side's region. */
  regionSize: number;
  /** Bytes of the peer's region. */
  remoteSize: number;
  /** Bytes of the bounce ring (see {@link bounceBytesFor}). */
  bounceBytes: number;
  /** Which side this is (stamped into its fabric header). */
  role: RegionRoleCode;
  /** The session nonce (the server's, from the offer). */
  nonce: Uint8Array;
}

/** The server as the client imports it (from the offer). */
export interface UrmaServerAddress {
  /** The server's region segment (`urma_seg_t`, the 48-byte fixed form). */
  segment: Uint8Array;
  /** Its description (description.ts: the library's blob where it has one). */
  segmentDescription?: Uint8Array;
  jetty: JettyAddress;
  /** The server jetty's description. */
  jettyDescription?: Uint8Array;
  token: number;
  /** The server side's readiness token (the immediate of this side's kicks). */
  notify: number;
}

/** The client as the server expects it (from the hello). */
export interface UrmaClientAddress {
  jetty: JettyAddress;
  /** The client jetty's description (description.ts). */
  jettyDescription?: Uint8Array;
  token: number;
  /** The client side's readiness token. */
  notify: number;
}

/** Bounce ring for messages up to `maxMessage` bytes: 4 of them, 256 KiB – 8 MiB. */
export function bounceBytesFor(maxMessage: number): number {
  const want = Math.min(8 << 20, Math.max(256 << 10, 4 * maxMessage));
  return Math.ceil(want / 4096) * 4096;
}

/** The client's segment SEND, as the server received it. */
interface SegmentMessage {
  bytes: Uint8Array;
  uasid: number;
  id: number;
}

/** One side with its region registered and stamped, not yet connected. */
export class PreparedUrmaSide implements CompletionSink {
  readonly #port: UrmaPortParts;
  readonly #options: PrepareOptions;
  readonly #mem: Uint8Array;
  readonly #regionSeg: Segment;
  readonly #aux: Uint8Array;
  readonly #auxSeg: Segment;
  readonly #health = new EndpointHealth();
  readonly #receives: ReceiveCredits;
  readonly #resources: SideResources;
  #segmentMessage: SegmentMessage | null = null;
  /** Status of the handshake's own signaled request, once it completed. */
  #requestStatus: number | null = null;
  #state: "prepared" | "connected" | "released" = "prepared";

  private constructor(port: UrmaPortParts, options: PrepareOptions) {
    this.#port = port;
    this.#options = options;
    const { hub, prepared } = port;
    this.#mem = new Uint8Array(options.regionSize + FABRIC_PAGE);
    this.#regionSeg = hub.ctx.registerSegment(this.#mem, { token: port.token });
    try {
      this.#auxSeg = hub.pool.takeAux(AUX_BOUNCE + options.bounceBytes);
    } catch (e) {
      this.#regionSeg.close();
      throw e;
    }
    this.#aux = this.#auxSeg.buffer;
    const binding = port.binding;
    binding.sink = this;
    this.#resources = new SideResources(hub, prepared, binding, this.#regionSeg, this.#auxSeg);
    stampRegion(this.local, options.role, options.nonce);
    this.#receives = new ReceiveCredits(port.lib, prepared.jetty, this.#auxSeg, this.#health);
    if (this.#health.failure !== null) {
      this.#resources.release();
      throw new Error(this.#health.failure);
    }
  }

  /** Takes `port` over (its jetty is deleted on failure) and prepares this side. */
  static prepare(port: UrmaPort, options: PrepareOptions): PreparedUrmaSide {
    const parts = port.handOver();
    try {
      return new PreparedUrmaSide(parts, options);
    } catch (e) {
      parts.hub.unbind(parts.binding);
      parts.hub.pool.retire(parts.prepared);
      throw e;
    }
  }

  /** This side's readiness token (peers name it in their kicks' immediates). */
  get notifyToken(): number {
    return this.#resources.binding.token;
  }

  /** This side's region (stamped). */
  get local(): Uint8Array {
    return this.#mem.subarray(0, this.#options.regionSize);
  }

  /** This side's region segment (`urma_seg_t`) as the peer imports it. */
  get segmentDescriptor(): Uint8Array {
    return this.#regionSeg.descriptor;
  }

  /** Its description (description.ts: the library's blob, or the fixed form). */
  get segmentDescription(): Uint8Array {
    return describeSegment(this.#regionSeg);
  }

  /** Client: imports the server, checks its stamp, sends this side's segment; the endpoint. */
  async connectToServer(server: UrmaServerAddress, timeoutMs: number): Promise<UrmaEndpoint> {
    return await this.#connecting(async () => {
      const expectedLen = this.#options.remoteSize + FABRIC_PAGE;
      checkSegment(server.segment, expectedLen, fromHex(server.jetty.eid), "server");
      const { segment, segmentDescription: sd, jettyDescription: jd } = server;
      const blobs = peerBlobs(this.#port.lib.layouts, segment, sd, jd, "server");
      const peer = this.#importPeer(segment, server.jetty, server.token, blobs);
      const deadline = Date.now() + timeoutMs;
      await this.#checkPeerStamp(peer, "server", deadline);
      const mine = describeSegment(this.#regionSeg); // ≤ DESCRIPTION_MAX: one receive
      this.#aux.set(mine, AUX_HANDSHAKE);
      const status = await this.#request(deadline, (batch) => {
        batch.sge(this.#auxSeg, this.#auxSeg.address + AUX_HANDSHAKE, mine.length);
        batch.send(peer.jetty, SEGMENT_IMM, RESERVED_WR_ID.proof, URMA_WR_FLAG.COMPLETE);
      });
      if (status !== 0) {
        throw new VerbusError(
          "HANDSHAKE",
          `urma: the SEND of this side's segment to the server's jetty failed: ${
            status < 0 ? this.#health.failure ?? "no completion in time" : crStatusName(status)
          }`,
        );
      }
      return this.#endpoint(peer, 1, server.notify);
    });
  }

  /** Server: waits for the client's segment, imports the client, checks its stamp; the endpoint. */
  async acceptClient(client: UrmaClientAddress, timeoutMs: number): Promise<UrmaEndpoint> {
    return await this.#connecting(async () => {
      const deadline = Date.now() + timeoutMs;
      await this.#pollUntil(() => this.#segmentMessage !== null, deadline);
      const message = this.#segmentMessage;
      if (message === null) {
        throw proofError(this.#health.failure ?? `no segment SEND arrived in ${timeoutMs} ms`);
      }
      if (message.uasid !== client.jetty.uasid || message.id !== client.jetty.id) {
        throw proofError(
          `the segment came from jetty ${message.uasid}/${message.id}, not the client's ${client.jetty.uasid}/${client.jetty.id}`,
        );
      }
      const expectedLen = this.#options.remoteSize + FABRIC_PAGE;
      const fixed = decodeDescription(message.bytes, "segment", "client").body
        .subarray(0, URMA_SEG_WIRE_BYTES);
      checkSegment(fixed, expectedLen, fromHex(client.jetty.eid), "client");
      const jd = client.jettyDescription;
      const blobs = peerBlobs(this.#port.lib.layouts, fixed, message.bytes, jd, "client");
      const peer = this.#importPeer(fixed, client.jetty, client.token, blobs);
      await this.#checkPeerStamp(peer, "client", deadline);
      return this.#endpoint(peer, 0, client.notify);
    });
  }

  /** Releases everything this side holds. Safe twice; a no-op once connected. */
  abort(): void {
    if (this.#state !== "prepared") return;
    this.#state = "released";
    this.#health.closed = true;
    try {
      this.#resources.release();
    } catch { /* a failing delete leaves nothing we can do */ }
  }

  /** Runs a connect step once; on failure releases everything and throws HANDSHAKE. */
  async #connecting(step: () => Promise<UrmaEndpoint>): Promise<UrmaEndpoint> {
    if (this.#state !== "prepared") {
      throw new VerbusError("HANDSHAKE", `urma: this side was already ${this.#state}`);
    }
    try {
      const endpoint = await step();
      if (this.#state !== "prepared") { // aborted while the last step completed
        endpoint.close();
        throw new VerbusError("HANDSHAKE", "urma: the side was aborted while connecting");
      }
      this.#state = "connected";
      return endpoint;
    } catch (e) {
      this.abort();
      if (e instanceof VerbusError && e.code === "HANDSHAKE") throw e;
      throw new VerbusError("HANDSHAKE", `urma: ${(e as Error).message}`);
    }
  }

  /** Imports the peer's segment, then its jetty (bound in RC mode). */
  #importPeer(
    descriptor: Uint8Array,
    jetty: JettyAddress,
    token: number,
    blobs: { seg: Uint8Array | null; jetty: Uint8Array | null },
  ): { segment: ImportedSegment; jetty: TargetJetty } {
    const { hub, mode } = this.#port, own = this.#resources;
    try {
      const segment = own.own(hub.ctx.importSegment(descriptor, token, blobs.seg));
      const remote = { eid: fromHex(jetty.eid), uasid: jetty.uasid, id: jetty.id };
      const target = own.own(
        hub.ctx.importJetty({ ...remote, transMode: transModeOf(mode) }, token, blobs.jetty),
      );
      if (mode === "RC") this.#port.prepared.jetty.bind(target);
      return { segment, jetty: target };
    } catch (e) {
      throw new VerbusError(
        "HANDSHAKE",
        `urma: cannot import the peer's segment / jetty: ${(e as Error).message}`,
      );
    }
  }

  /** READs the peer's fabric header into the handshake scratch and checks its stamp. */
  async #checkPeerStamp(
    peer: { segment: ImportedSegment; jetty: TargetJetty },
    who: "server" | "client",
    deadline: number,
  ): Promise<void> {
    const status = await this.#request(deadline, (batch) => {
      batch.sge(this.#auxSeg, this.#auxSeg.address + AUX_HANDSHAKE, STAMP_BYTES);
      batch.read(
        peer.jetty,
        peer.segment,
        peer.segment.address,
        RESERVED_WR_ID.proof,
        URMA_WR_FLAG.COMPLETE,
      );
    });
    if (status !== 0) {
      const why = status < 0
        ? this.#health.failure ?? "no completion in time"
        : crStatusName(status);
      throw proofError(`reading the ${who}'s region header failed: ${why}`);
    }
    const peerRole = this.#options.role === ROLE_SERVER ? ROLE_CLIENT : ROLE_SERVER;
    const header = this.#aux.subarray(AUX_HANDSHAKE, AUX_HANDSHAKE + STAMP_BYTES);
    const why = checkStamp(header, peerRole, this.#options.nonce);
    if (why !== undefined) throw proofError(`the ${who}'s region header: ${why}`);
  }

  /** Posts one signaled request and waits for it: its status, or -1 (none by `deadline`). */
  async #request(deadline: number, build: (batch: UrmaSendBatch) => void): Promise<number> {
    const batch = new UrmaSendBatch(this.#port.lib, 1, 1);
    build(batch);
    this.#requestStatus = null;
    const rc = batch.post(this.#port.prepared.jetty);
    if (rc !== 0) throw new Error(`urma_post_jetty_send_wr: ${this.#port.lib.lastError()}`);
    await this.#pollUntil(() => this.#requestStatus !== null, deadline);
    return this.#requestStatus ?? -1;
  }

  /** Reaps until `done()` (or the deadline, or a failure); yields to the event loop meanwhile. */
  async #pollUntil(done: () => boolean, deadline: number): Promise<void> {
    for (;;) {
      this.#port.hub.reap();
      if (done() || this.#health.failure !== null || Date.now() >= deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** A handshake completion (the hub hands it over): its own request's status, or a receive. */
  onCompletion(records: CrReader, i: number): void {
    const status = records.status(i);
    if (!records.isRecv(i)) {
      if (records.userCtx(i) === RESERVED_WR_ID.proof) this.#requestStatus = status;
      return;
    }
    this.#receives.onReceive();
    if (status !== 0) {
      this.#health.fail(`receive completed with ${crStatusName(status)}`);
    } else if (
      this.#segmentMessage === null && records.opcode(i) === URMA_CR_OPC.SEND_WITH_IMM &&
      records.imm(i) === SEGMENT_IMM
    ) {
      const bytes = Math.min(records.completionLen(i), AUX_RECV_LEN);
      this.#segmentMessage = {
        bytes: this.#aux.slice(AUX_RECV, AUX_RECV + bytes),
        uasid: records.remoteUasid(i),
        id: records.remoteId(i),
      };
    }
  }

  afterReap(): void {}

  onJfcFailure(reason: string): void {
    this.#health.fail(reason);
  }

  /** The connected endpoint (it owns everything from now on). */
  #endpoint(
    peer: { segment: ImportedSegment; jetty: TargetJetty },
    notificationsUsed: number,
    peerToken: number,
  ): UrmaEndpoint {
    const port = this.#port;
    return new UrmaEndpoint({
      lib: port.lib,
      hub: port.hub,
      prepared: port.prepared,
      binding: this.#resources.binding,
      resources: this.#resources,
      peerToken,
      mem: this.#mem,
      regionSize: this.#options.regionSize,
      regionSeg: this.#regionSeg,
      aux: this.#aux,
      auxSeg: this.#auxSeg,
      remoteSize: this.#options.remoteSize,
      rc: port.mode === "RC",
      peerSegment: peer.segment,
      peerJetty: peer.jetty,
      health: this.#health,
      receives: this.#receives,
      notificationsUsed,
    });
  }
}

function proofError(why: string): VerbusError {
  return new VerbusError("HANDSHAKE", `urma proof: ${why}`);
}
