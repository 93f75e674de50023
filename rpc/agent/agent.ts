/**
 * The same-host agent (`verbus agent`): ONE connection to a remote verbus server — over the best
 * fabric the two hosts share, through {@link connect} — shared by every local process that joins
 * its shared-memory ring (`transport/agent_ring/mod.ts`). N processes then cost the server one
 * session, one QP, one region instead of N.
 *
 * Loop: drain the ring (producers' posted requests), decode each record (bounds-checked: a bad
 * record is answered with an error naming what was wrong), forward the batch under one doorbell
 * with `Client.callTo` — which picks EAGER / LAZY / BULK / TCP for the remote leg like any client,
 * and on the fabric posts each call with its answer's destination (this agent's sink, tagged by
 * ring slot: no promise, no result object) — and write the answer back, copied once from the
 * remote session's slot, into the producer's slot (or its spill area's response half when larger;
 * when that half is full of answers not consumed yet, the answer waits in `held_answers.ts` and is
 * written, in order, as soon as the producer releases earlier ones — only an answer larger than
 * the whole half fails).
 * Idle, the loop sleeps in one futex wait on the ring's doorbell (producers wake it only while it
 * sleeps); about every `sweepMs` it gives back the table entries of producers that died or left
 * (dropping answers held for them), and reclaims ring positions claimed and never published.
 *
 * Threading: the JS thread that started it (the remote client's progress engine shares it).
 * @module
 */
import { setImmediate } from "node:timers";
import type { z } from "zod";
import { VerbusError } from "../../errors.ts";
import {
  type AgentRingHost,
  type AgentRingSizes,
  createAgentRing,
  type DrainBuffers,
} from "../../transport/agent_ring/mod.ts";
import { cpuYielder } from "../../transport/cpu.ts";
import { parseOptions } from "../../util/options.ts";
import {
  type Client,
  type ClientCallResult,
  connectDirect as connect,
} from "../client/direct_client.ts";
import type { ClientCallOptions, ClientOptions } from "../client/client_options.ts";
import type { AnswerSink } from "../session/client/fabric_call.ts";
import { type AgentRequest, decodeRequest, newAgentRequest } from "./request_record.ts";
import {
  encodeError,
  encodeResponse,
  encodeResponseFrom,
  responseBytes,
} from "./response_record.ts";
import { RESPONSE_HEADER } from "./record.ts";
import { HeldAnswers } from "./held_answers.ts";
import { type AgentOptions, agentOptionsSchema, type AgentStats } from "./agent_options.ts";

const BATCH = 256;
/** The options of a forwarded call (one record per ring slot, refilled per call). */
type ForwardOptions = ClientCallOptions & {
  attachment: Uint8Array;
  timeoutMs: number;
};
const NO_FORWARD_OPTIONS: ForwardOptions = {
  attachment: new Uint8Array(0),
  timeoutMs: 0,
  forcePath: undefined,
  expectedResponseBytes: undefined,
  logId: 0,
};
/** While answers are held, the longest the loop sleeps before it looks for room again. */
const HELD_RETRY_MS = 20;

/** A running agent. Create with {@link startAgent}; stop with {@link Agent.close}. */
export class Agent {
  readonly #ring: AgentRingHost;
  readonly #remote: Client;
  readonly #opts: z.output<typeof agentOptionsSchema>;
  readonly #out: DrainBuffers = {
    desc: new Uint32Array(BATCH),
    producer: new Uint32Array(BATCH),
    slot: new Uint32Array(BATCH),
    length: new Uint32Array(BATCH),
  };
  #forwarded = 0;
  /** Forwarded calls that went through a promise (TCP, or a wait for a free remote slot). */
  #viaPromise = 0;
  /** Drains that found requests (each forwarded under one doorbell). */
  #batches = 0;
  /** Per ring slot (producer × slots + slot): the options of the call it carries. */
  readonly #options: (ForwardOptions | undefined)[] = [];
  readonly #req: AgentRequest = newAgentRequest();
  readonly #slotsPer: number;
  #failed = 0;
  #badRecords = 0;
  #running = true;
  #wakeScheduled = false;
  /** Answers waiting for room in their producer's response half. */
  readonly #held = new HeldAnswers<ClientCallResult>();
  /** Calls forwarded to the remote server and not answered yet. */
  #remoteRunning = 0;
  /** The loop sleeps in the ring's futex (no turn of it flushes deferred wake-ups meanwhile). */
  #asleep = false;
  readonly #done: Promise<void>;

  readonly #yieldCpu: () => void;

  /** @internal use {@link startAgent}. */
  constructor(
    ring: AgentRingHost,
    remote: Client,
    opts: z.output<typeof agentOptionsSchema>,
    yieldCpu: () => void,
  ) {
    this.#yieldCpu = yieldCpu;
    this.#ring = ring;
    this.#remote = remote;
    this.#opts = opts;
    this.#slotsPer = opts.slots;
    this.#done = this.#loop();
  }

  /** The agent's name (`agent:<name>`). */
  get name(): string {
    return this.#opts.name;
  }

  /** The remote client (its fabric, handshake and stats). */
  get remote(): Client {
    return this.#remote;
  }

  /** Where producers find the ring: the path of the agent's record file. */
  get ringName(): string {
    return this.#ring.name;
  }

  async #loop(): Promise<void> {
    const ring = this.#ring, out = this.#out, reclaim = this.#opts.reclaimMs;
    const delay = this.#opts.wakeDelayMs;
    let lastSweep = 0, lastWork = 0;
    while (this.#running) {
      const seen = ring.doorbell();
      const now = performance.now();
      const n = ring.drain(out, now, reclaim);
      if (n > 0) {
        // The batch's requests share one doorbell (one flush and one kick of the server).
        this.#batches++;
        const s = this.#remote.session;
        s?.cork();
        try {
          for (let i = 0; i < n; i++) this.#forward(out.producer[i], out.slot[i], out.length[i]);
        } finally {
          s?.uncork();
        }
      }
      const sweep = now - lastSweep >= this.#opts.sweepMs;
      // Held answers first (before the sweep: a gone producer's are dropped, its entry freed).
      const placed = this.#held.size > 0 ? this.#placeHeld(sweep) : 0;
      ring.flushWakes(delay); // answers whose wake-up was deferred, and rejected records
      if (sweep) {
        lastSweep = now;
        ring.sweep();
      }
      if (n > 0 || placed > 0) lastWork = now;
      // Poll on while work came lately (giving the core away between looks, as the progress
      // engine does), then sleep in the doorbell's futex.
      if (now - lastWork < this.#opts.idleAfterMs) {
        // Calls forwarded and unanswered: the remote client's progress loop polls (and yields)
        // in this same thread; a second yield per turn would only give the core away twice.
        if (n === 0 && this.#remoteRunning === 0) this.#yieldCpu();
        await new Promise((r) => setImmediate(r));
      } else {
        ring.flushWakes(0); // nothing deferred past this turn: this loop may sleep long
        this.#asleep = true;
        // Holding answers: a producer's release rings the doorbell; the bound is a safety net.
        const most = this.#held.size > 0 ? HELD_RETRY_MS : this.#opts.sweepMs;
        await ring.wait(seen, Math.min(most, reclaim));
        this.#asleep = false;
      }
    }
  }

  #forward(p: number, k: number, length: number): void {
    const ring = this.#ring, tag = p * this.#slotsPer + k;
    let req;
    try {
      req = decodeRequest(ring.request(p, k, length), length, this.#req);
    } catch (e) {
      this.#badRecords++;
      this.#answer(p, k, encodeError(ring.responseArea(p, k)!, e));
      return;
    }
    this.#forwarded++;
    this.#remoteRunning++;
    // The call's options live in its slot's entry of a table kept for the agent's life (the
    // remote session keeps them until the call settles, for a TCP redo): nothing per call.
    const o = this.#options[tag] ??= { ...NO_FORWARD_OPTIONS };
    o.attachment = req.attachment;
    o.timeoutMs = req.timeoutMs || this.#opts.timeoutMs;
    o.forcePath = req.forcePath;
    o.expectedResponseBytes = req.expectedResponseBytes || undefined;
    o.logId = req.logId;
    if (!this.#remote.callTo(req.service, req.method, req.request, o, this.#sink, tag)) {
      this.#viaPromise++;
    }
  }

  /**
   * Where the remote session hands the answers of forwarded calls (`Client.callTo`), by tag
   * (producer × slots + slot): no promise and no result per call; an answer is copied once,
   * from the remote session's slot straight into the producer's.
   */
  readonly #sink: AnswerSink = {
    answer: (tag, src, off, len, att, path) => {
      this.#remoteRunning--;
      const ring = this.#ring, p = (tag / this.#slotsPer) | 0, k = tag - p * this.#slotsPer;
      const fabric = this.#remote.fabric;
      const bytes = RESPONSE_HEADER + fabric.length * 3 + len + att;
      if (bytes > ring.maxRecord) {
        this.#tooLarge(p, k, len);
        return;
      }
      const area = bytes > ring.slotData && this.#held.has(p)
        ? null
        : ring.responseArea(p, k, bytes);
      if (area !== null) {
        this.#answer(p, k, encodeResponseFrom(area, src, off, len, att, path, fabric));
        return;
      }
      // No room in the producer's response half now: hold a copy (in order; see #place).
      this.#hold(p, k, {
        response: src.slice(off, off + len),
        attachment: src.slice(off + len, off + len + att),
        path,
        fabric,
      });
    },
    result: (tag, r) => {
      this.#remoteRunning--;
      const p = (tag / this.#slotsPer) | 0, k = tag - p * this.#slotsPer;
      if (responseBytes(r) > this.#ring.maxRecord) this.#tooLarge(p, k, r.response.length);
      else if (!this.#place(p, k, r)) this.#hold(p, k, r);
    },
    fail: (tag, e) => {
      this.#remoteRunning--;
      this.#failed++;
      const p = (tag / this.#slotsPer) | 0, k = tag - p * this.#slotsPer;
      this.#answer(p, k, encodeError(this.#ring.responseArea(p, k)!, e));
    },
  };

  /** Answers slot (p, k) with BOUNDS: its `bytes`-byte response fits neither slot nor spill half. */
  #tooLarge(p: number, k: number, bytes: number): void {
    const ring = this.#ring;
    this.#answer(
      p,
      k,
      encodeError(
        ring.responseArea(p, k)!,
        new VerbusError(
          "BOUNDS",
          `the response (${bytes} bytes) does not fit the agent's ${ring.slotData}-byte slot nor the ${ring.maxRecord}-byte spill half`,
        ),
      ),
    );
  }

  /**
   * The producer's response half is full of answers it has not consumed yet: hold this one (in
   * order) until it consumes some; its release rings this loop's doorbell.
   */
  #hold(p: number, k: number, r: ClientCallResult): void {
    this.#held.push(p, k, r);
    this.#ring.setHeld(this.#held.size);
  }

  /**
   * Writes answer `r` (no larger than a spill half) of slot (p, k) and publishes it: in the slot
   * when it fits, else in p's response half. False when the half has no room now, or when
   * earlier answers of p are held (they go first).
   */
  #place(p: number, k: number, r: ClientCallResult, held = false): boolean {
    const ring = this.#ring, bytes = responseBytes(r);
    if (!held && bytes > ring.slotData && this.#held.has(p)) return false;
    const area = ring.responseArea(p, k, bytes);
    if (!area) return false;
    this.#answer(p, k, encodeResponse(area, r));
    return true;
  }

  /**
   * Writes the held answers that fit now; drops (answers empty) those of producers that died or
   * left, so nothing stays held for them and their entries can be reclaimed. Returns how many
   * it wrote.
   */
  #placeHeld(sweep: boolean): number {
    const held = this.#held, ring = this.#ring;
    if (sweep) {
      for (const p of held.producers()) {
        if (ring.producerLive(p)) continue;
        for (const h of held.drop(p)) this.#answer(p, h.k, 0);
      }
    }
    const n = held.place((p, k, r) => this.#place(p, k, r, true));
    ring.setHeld(held.size);
    return n;
  }

  /**
   * Answers slot (p, k), and wakes its producer at the end of this turn: answers that complete
   * together (one batch from the remote session) cost one wake-up per producer, not one per call.
   */
  #answer(p: number, k: number, length: number): void {
    this.#ring.respond(p, k, length);
    if (this.#wakeScheduled) return;
    this.#wakeScheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = () => {
    this.#wakeScheduled = false;
    // While the loop sleeps no later turn flushes what is deferred: wake everyone answered now.
    this.#ring.flushWakes(this.#asleep ? 0 : this.#opts.wakeDelayMs);
  };

  /** Counters, and the ring's. */
  stats(): AgentStats {
    const s = this.#remote.session?.stats;
    return {
      forwarded: this.#forwarded,
      viaPromise: this.#viaPromise,
      batches: this.#batches,
      remote: {
        submitted: s?.submitted ?? 0,
        sunk: s?.sunk ?? 0,
        doorbells: s?.doorbells ?? 0,
      },
      failed: this.#failed,
      badRecords: this.#badRecords,
      ring: this.#ring.counters(),
      fabric: this.#remote.fabric,
    };
  }

  /** Stops the loop, closes the ring (producers see CLOSED at once) and the remote client. Safe twice. */
  async close(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#ring.wake();
    await this.#done;
    this.#ring.close();
    await this.#remote.close();
  }
}

/**
 * Starts an agent: creates the ring `agent:<name>` that local processes join with
 * `connect("agent:<name>")`, then connects to the remote server at `address` (the best fabric,
 * then TCP); calls posted meanwhile wait in the ring.
 * Throws LISTEN_FAILED when an agent of that name already runs, INVALID_OPTIONS on bad options.
 */
export async function startAgent(
  address: string | { host: string; port: number },
  options: AgentOptions = {},
): Promise<Agent> {
  const o = parseOptions(agentOptionsSchema, options, "startAgent() options");
  if (o.entries & (o.entries - 1) || o.slotBytes & (o.slotBytes - 1)) {
    throw new VerbusError(
      "INVALID_OPTIONS",
      "startAgent() options: entries and slotBytes must be powers of two",
    );
  }
  const sizes: AgentRingSizes = {
    entries: o.entries,
    producers: o.producers,
    slots: o.slots,
    slotBytes: o.slotBytes,
    spillBytes: o.spillBytes,
  };
  // The ring first: a name already taken fails before anything reaches the server.
  const ring = await createAgentRing(o.name, sizes);
  try {
    return new Agent(
      ring,
      await connect(address, o.client as ClientOptions),
      o,
      await cpuYielder(),
    );
  } catch (e) {
    ring.close();
    throw e;
  }
}
