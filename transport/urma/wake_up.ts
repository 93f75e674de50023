/**
 * Kicks and credits of a URMA endpoint.
 *
 * - `kick()` writes my kick counter into the peer's doorbell word with WRITE_IMM whose
 *   immediate is the peer's readiness token: it consumes one of the peer's receives and
 *   completes on the peer process's JFC naming the peer's jetty, so the peer's hub announces
 *   that one session (and the peer process wakes if it sleeps on its JFCE).
 * - Credits: the peer publishes its running receive total into my fabric page. A kick with no
 *   credit left is a plain WRITE (it would find no receive), signaled: once it completed I read
 *   the credit word again and, if the peer published meanwhile, kick again with the immediate.
 * - My side of the same rule (`afterReap`, run by the hub after it handed me records): consumed
 *   receives are reposted in batches and the new total published with a signaled write; once
 *   that write completed I announce myself once more, so my session reads its doorbell after
 *   the peer could have seen the new credit. Each side writes, waits for its write's completion,
 *   then reads what the other wrote: one of them sees the other, so a kick is never lost.
 * - A kick the send queue has no room for is owed and posted by the next `afterReap` (room comes
 *   back with completions).
 * - The doorbell and the kick words carry the FENCE flag: they execute after every earlier
 *   request of this jetty.
 * Allocates nothing. One JS thread.
 * @module
 */
import { FABRIC_HEADER } from "../control_page.ts";
import { OK } from "../fabric.ts";
import { CREDIT_WORD, RECV_DEPTH } from "./endpoint_config.ts";
import type { UrmaEndpointParts } from "./endpoint_parts.ts";
import { URMA_WR_FLAG } from "./data_path.ts";
import type { EndpointHealth } from "./health.ts";
import type { UrmaHub } from "./hub.ts";
import type { ReceiveCredits } from "./receive_credits.ts";
import type { UrmaSendSide } from "./send_side.ts";

/** Kicks and credit publication of one endpoint. */
export class UrmaWakeUp {
  readonly #hub: UrmaHub;
  readonly #token: number;
  readonly #peerToken: number;
  readonly #creditWord: number;
  readonly #health: EndpointHealth;
  readonly #sendSide: UrmaSendSide;
  readonly #receives: ReceiveCredits;
  /** My fabric page's words (the peer's receive total at CREDIT_WORD). */
  readonly #fabricPageWords: Int32Array;
  /** The kick counter I write into the peer's doorbell. */
  #kicks = 0;
  /** Kicks (and the handshake SEND) that consumed one of the peer's receives. */
  #notificationsSent: number;
  /** Sequence of my last credit publication until it completed, else -1. */
  #publishSeq = -1;
  /** Sequence of a kick sent without credit until it completed, else -1. */
  #starvedSeq = -1;
  /** A kick found no room in the send queue: post it at the next chance. */
  #owed = false;

  constructor(parts: UrmaEndpointParts, sendSide: UrmaSendSide) {
    this.#hub = parts.hub;
    this.#token = parts.binding.token;
    this.#peerToken = parts.peerToken;
    this.#creditWord = parts.remoteSize + CREDIT_WORD;
    this.#health = parts.health;
    this.#sendSide = sendSide;
    this.#receives = parts.receives;
    const mem = parts.mem;
    this.#fabricPageWords = new Int32Array(mem.buffer, mem.byteOffset + parts.regionSize, 4);
    this.#notificationsSent = parts.notificationsUsed;
  }

  /** Reaps the process's JFC, then publishes my receive total to the peer if it changed. */
  reapAndPublish(): void {
    this.#hub.reap();
    this.#publish();
  }

  #publish(): void {
    const seq = this.#receives.publish(this.#sendSide, this.#creditWord);
    if (seq >= 0) this.#publishSeq = seq;
  }

  /** True while the peer's published receive total allows one more notification. */
  #credit(): boolean {
    const granted = Atomics.load(this.#fabricPageWords, CREDIT_WORD >> 2) >>> 0 || RECV_DEPTH;
    return ((granted - this.#notificationsSent) | 0) > 0;
  }

  /** Writes `value` into the peer's doorbell: WRITE_IMM naming the peer when a credit is left. */
  #post(value: number): boolean {
    const credit = this.#credit();
    const status = this.#sendSide.postInternalWord(
      FABRIC_HEADER.doorbell,
      value,
      URMA_WR_FLAG.FENCE,
      credit ? this.#peerToken : -1,
      !credit,
    );
    if (status !== OK) return false;
    if (credit) this.#notificationsSent = (this.#notificationsSent + 1) >>> 0;
    else this.#starvedSeq = this.#sendSide.lastSeq;
    this.#sendSide.post();
    return true;
  }

  /** Tells the peer new work was published: the next kick count into its doorbell. */
  kick(): void {
    if (this.#health.failure !== null) return;
    const next = (this.#kicks + 1) >>> 0;
    this.#kicks = next; // an owed kick writes the latest count
    this.#owed = !this.#post(next);
  }

  /**
   * After the hub handed me records: repost and publish credits; look at my doorbell once more
   * when a publication completed; resend a kick that went without credit once it completed, if
   * the peer published meanwhile; post an owed kick.
   */
  afterReap(): void {
    if (this.#health.failure !== null) return;
    const send = this.#sendSide;
    this.#receives.repostBatched();
    this.#publish();
    if (this.#publishSeq >= 0 && send.completed(this.#publishSeq)) {
      this.#publishSeq = -1;
      this.#hub.announce(this.#token);
    }
    if (this.#starvedSeq >= 0 && send.completed(this.#starvedSeq)) {
      this.#starvedSeq = -1;
      if (this.#credit()) this.#owed = true;
    }
    if (this.#owed) this.#owed = !this.#post(this.#kicks);
  }
}
