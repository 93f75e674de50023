/**
 * Control path of the verbs fabric: how a session side's endpoint is born connected.
 * ```
 *  PreparedVerbsEndpoint.prepare(device, shape, role, nonce)   PD, CQs, RC QP, MRs; region stamped
 *        │  (the provider connects the QP through rdma_cm: cm_connect.ts / cm_listen.ts)
 *        ▼
 *  prepared.connect(peer, connection)   RDMA READ of the peer's fabric header, checkStamp
 *        ▼
 *  VerbsEndpoint                         connected and proven; the data path
 * ```
 * A prepared endpoint that never connects is released with `close()`; a failed `connect()`
 * releases everything (the CM connection included) before it throws HANDSHAKE.
 * Control path (allocates, awaits); one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { RegionRoleCode } from "../control_page.ts";
import { RESERVED_WR_ID } from "../fabric.ts";
import { checkStamp, STAMP_BYTES, stampRegion } from "../proof.ts";
import { RING_FULL } from "../rdma_send_ring.ts";
import type { CmConnection } from "./cm.ts";
import type { QueuePair } from "./qp.ts";
import { VerbsSendPath } from "./send_path.ts";
import { VerbsEndpoint } from "./verbs_endpoint.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import { VerbsHub } from "./hub.ts";
import { ResourcePool } from "./resource_pool.ts";
import type { EndpointResources, EndpointShape } from "./verbs_resources.ts";

/** How long the proof read may take. */
const PROOF_TIMEOUT_MS = 5000;

/** The peer as the handshake learned it. */
export interface VerbsPeer {
  /** Address of the peer's region (user-space addresses fit in 53 bits). */
  readonly addr: number;
  readonly rkey: number;
  /** Bytes of the peer's region. */
  readonly size: number;
  /** The peer waits in event mode. */
  readonly events: boolean;
  /** The peer endpoint's token in its process's hub (every kick's immediate). */
  readonly token: number;
  /** The role the peer's region must carry. */
  readonly role: RegionRoleCode;
  /** Printable peer name for errors ("10.77.0.2:7001"). */
  readonly name: string;
}

/** A session side's resources, created and stamped, not yet connected. */
export class PreparedVerbsEndpoint {
  #resources: EndpointResources | null;

  private constructor(
    private readonly lib: VerbsLib,
    resources: EndpointResources,
    /** The session nonce (the peer's header must carry it too). */
    readonly nonce: Uint8Array,
    private readonly signalEvery: number,
  ) {
    this.#resources = resources;
  }

  /**
   * Takes the resources of `shape` from the process's pool for `device` (prepared ahead: PD,
   * MRs, QP on the shared CQ; `preparedQps` are kept ready); stamps the region's fabric header
   * with `role` and `nonce`. Throws (NATIVE_CALL, FABRIC when the shared CQ is full…) after
   * releasing what it made.
   */
  static prepare(
    lib: VerbsLib,
    device: string,
    shape: EndpointShape,
    role: RegionRoleCode,
    nonce: Uint8Array,
    signalEvery: number,
    preparedQps: number,
  ): PreparedVerbsEndpoint {
    const pool = ResourcePool.of(VerbsHub.forDevice(lib, device));
    pool.target = preparedQps;
    const resources = pool.take(shape);
    stampRegion(resources.local, role, nonce);
    return new PreparedVerbsEndpoint(lib, resources, nonce, signalEvery);
  }

  #held(): EndpointResources {
    if (!this.#resources) throw new VerbusError("HANDSHAKE", "the verbs endpoint was released");
    return this.#resources;
  }

  /** The QP to connect through rdma_cm (still in RESET). */
  get qp(): QueuePair {
    return this.#held().qp;
  }

  /** The registered region (what the peer reaches): its buffer, address and rkey. */
  get region(): { readonly local: Uint8Array; readonly address: number; readonly rkey: number } {
    const r = this.#held();
    return { local: r.local, address: r.region.address, rkey: r.region.rkey };
  }

  /** This endpoint's token in the process's hub (the peer's kicks carry it). */
  get token(): number {
    return this.#held().token;
  }

  /** The device the resources live on. */
  get device(): string {
    return this.#held().ctx.deviceName;
  }

  /**
   * Turns the prepared side into a connected endpoint over the ESTABLISHED `connection`: reads
   * the peer's fabric header with one RDMA READ and checks its stamp. On any failure releases
   * everything (the connection too) and throws HANDSHAKE naming what failed.
   */
  async connect(peer: VerbsPeer, connection: CmConnection): Promise<VerbsEndpoint> {
    const resources = this.#held();
    this.#resources = null; // owned by the send path / endpoint from here on
    const send = new VerbsSendPath(this.lib, resources, peer, peer.name, this.signalEvery);
    // Completions of this QP reach the send path from the process's hub from now on (the proof
    // read's included); the endpoint adds its receive side.
    resources.attach({ onSend: (wc, k) => send.onSend(wc, k), onReceive: () => {} });
    const release = () => {
      send.markClosed();
      connection.disconnect();
      send.released = true;
      try {
        ResourcePool.of(resources.hub).give(resources);
      } finally {
        connection.close();
      }
    };
    let header: Uint8Array;
    try {
      header = await readPeerHeader(send, peer.name);
    } catch (e) {
      release();
      throw e;
    }
    const why = checkStamp(header, peer.role, this.nonce);
    if (why) {
      release();
      throw new VerbusError("HANDSHAKE", `verbs peer ${peer.name}: ${why}`);
    }
    return new VerbsEndpoint({
      lib: this.lib,
      resources,
      send,
      connection,
      remoteSize: peer.size,
      peerToken: peer.token,
      peerName: peer.name,
    });
  }

  /** Releases every resource (the offer was aborted, or connecting failed). Safe twice. */
  close(): void {
    const r = this.#resources;
    this.#resources = null;
    if (r) ResourcePool.of(r.hub).give(r);
  }
}

/**
 * The handshake proof read: RDMA READs the peer's fabric header into the bounce ring and
 * returns a copy — proof that the connection and the peer's rkey work. Throws HANDSHAKE naming
 * the completion status when they do not.
 */
async function readPeerHeader(send: VerbsSendPath, peerName: string): Promise<Uint8Array> {
  const ring = send.ring;
  const at = ring.reserve(STAMP_BYTES, false);
  if (at === RING_FULL) throw new VerbusError("HANDSHAKE", "proof read: no send-queue room");
  const seq = ring.nextSeq;
  send.readIntoBounce(at, STAMP_BYTES, 0, RESERVED_WR_ID.proof);
  ring.post();
  const end = performance.now() + PROOF_TIMEOUT_MS;
  while (!ring.completed(seq) && send.failure === null && performance.now() < end) {
    if (ring.reap() === 0) await new Promise((r) => setTimeout(r, 1));
  }
  if (send.failure !== null) {
    throw new VerbusError(
      "HANDSHAKE",
      `proof read of ${peerName}'s region failed: ${send.failure}`,
    );
  }
  if (!ring.completed(seq)) {
    throw new VerbusError(
      "HANDSHAKE",
      `proof read of ${peerName}'s region did not complete within ${PROOF_TIMEOUT_MS} ms`,
    );
  }
  return send.bounce.slice(at, at + STAMP_BYTES);
}
