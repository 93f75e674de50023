/**
 * brpc's RDMA flow control, as arithmetic only (no verbs): every work request is a
 * SEND_WITH_IMM whose immediate returns receive credits; the windows are
 * ```
 *   local  window = min(local SQ, remote RQ) − 3   sends I may have in flight (peer's receives)
 *   remote window = min(local RQ, remote SQ) − 3   receives the peer may consume of mine
 * ```
 * the 3 work requests kept out of both are for standalone ACKs (zero-length SEND_WITH_IMM), sent
 * when the credits waiting to go back exceed half the remote window and an ACK slot is free. A
 * data send is signalled every quarter of the local window and its `wr_id` is the number of send
 * slots its completion frees; an ACK is always signalled with `wr_id` 0.
 *
 * One instance per connection; one JS thread. Counters only: nothing allocated.
 * @module
 */
import { RESERVED_WRS } from "./hello.ts";

/** The credit state of one brpc RDMA connection. */
export class CreditWindow {
  /** min(local SQ, remote RQ) − 3. */
  readonly localCapacity: number;
  /** min(local RQ, remote SQ) − 3. */
  readonly remoteCapacity: number;
  /** Receives the peer has posted for me that I have not used: a data send needs one. */
  remoteRq: number;
  /** Free data slots of my send queue. */
  sqWindow: number;
  /** Free standalone-ACK slots (starts at 3). */
  ackWindow = RESERVED_WRS;
  /** Receives I reposted and have not yet returned as credits. */
  pendingCredits = 0;
  /** Data sends since the last signalled one. */
  unsignaled = 0;
  /** `wr_id` the last {@link takeSend} chose: 0 = unsignalled, n = signalled, frees n slots. */
  signalCount = 0;

  constructor(localSq: number, localRq: number, remoteSq: number, remoteRq: number) {
    this.localCapacity = Math.min(localSq, remoteRq) - RESERVED_WRS;
    this.remoteCapacity = Math.min(localRq, remoteSq) - RESERVED_WRS;
    if (this.localCapacity < 1 || this.remoteCapacity < 1) {
      throw new RangeError(
        `queue sizes too small for brpc's windows (SQ ${localSq}/${remoteSq}, RQ ${localRq}/${remoteRq})`,
      );
    }
    this.remoteRq = this.localCapacity;
    this.sqWindow = this.localCapacity;
  }

  /** Whether a data send may be posted now. */
  get canSend(): boolean {
    return this.remoteRq > 0 && this.sqWindow > 0;
  }

  /**
   * Accounts one data send (call only when {@link canSend}): returns the immediate it carries
   * (every pending credit) and sets {@link signalCount}.
   */
  takeSend(): number {
    const imm = this.pendingCredits;
    this.pendingCredits = 0;
    this.remoteRq--;
    this.sqWindow--;
    if (++this.unsignaled >= Math.floor(this.localCapacity / 4)) {
      this.signalCount = this.unsignaled;
      this.unsignaled = 0;
    } else this.signalCount = 0;
    return imm;
  }

  /**
   * A send completed: `wrId` 0 is a standalone ACK (its slot is free again), otherwise the data
   * slots it frees. Returns false when `wrId` claims more slots than are in flight (a bug or a
   * corrupted completion: the connection must fail).
   */
  sendCompleted(wrId: number): boolean {
    if (wrId === 0) {
      if (this.ackWindow >= RESERVED_WRS) return false;
      this.ackWindow++;
      return true;
    }
    if (this.sqWindow + wrId > this.localCapacity) return false;
    this.sqWindow += wrId;
    return true;
  }

  /**
   * Credits arrived in a receive's immediate. Returns false when the peer returns more than it
   * could owe (its window would exceed the local capacity): a lying peer.
   */
  credited(imm: number): boolean {
    if (this.remoteRq + imm > this.localCapacity) return false;
    this.remoteRq += imm;
    return true;
  }

  /**
   * `n` receives were reposted (n = 1 after a data receive, 0 after an ACK completed). Returns
   * the immediate of a standalone ACK to send now, or 0: one goes out when the credits waiting
   * before this call exceed half the remote window and an ACK slot is free.
   */
  returnCredits(n: number): number {
    const before = this.pendingCredits;
    this.pendingCredits += n;
    if (before > Math.floor(this.remoteCapacity / 2) && this.ackWindow > 0) {
      const imm = this.pendingCredits;
      if (imm === 0) return 0;
      this.pendingCredits = 0;
      this.ackWindow--;
      return imm;
    }
    return 0;
  }
}
