/**
 * A process's calls through a same-host agent (`connect("agent:NAME")`): each call is written
 * into one of this process's slots in the agent's ring and answered there; the agent forwards it
 * over its one remote connection. Same API and result shape as {@link Client} (`call`,
 * `callMany`, `submit` / `progress` / `poll` / `wait`, `stats`, `close`), plus `via: "agent"`;
 * `path` and `fabric` are those the agent's remote call took.
 *
 * When the agent goes away (closed, killed), the calls in flight fail with CONNECTION_CLOSED
 * naming why, and the next call joins the agent of that name again (a restarted one), or fails
 * with NOT_FOUND while there is none. A call that finds the ring FULL waits for room until its
 * deadline, or goes over this process's own connection when `fallback` names the server.
 *
 * Threading: the JS thread that created it. Waiting for answers, it naps (blocks this thread
 * in a futex wait the agent's wake-up ends, at most `napUs`), then parks one futex wait
 * off-thread (`answer_waits.ts`).
 * @module
 */
import { setImmediate } from "node:timers";
import type { z } from "zod";
import { TimeoutError, VerbusError } from "../../errors.ts";
import { type AgentRingProducer, joinAgentRing } from "../../transport/agent_ring/mod.ts";
import { cpuYielder } from "../../transport/cpu.ts";
import { parseOptions } from "../../util/options.ts";
import type { ClientCallOptions } from "../client/client_options.ts";
import { ClientBase } from "../client/rpc_client.ts";
import type { CallPath } from "../client/selector.ts";
import {
  type AgentCallResult,
  type AgentClientOptions,
  agentClientOptionsSchema,
  type AgentClientStats,
} from "./agent_client_options.ts";
import { encodeRequest, requestBytes, type RequestFields } from "./request_record.ts";
import { decodeAgentResult } from "./response_record.ts";
import { SLOT_IDLE, SLOT_PENDING, SlotCalls } from "./slot_calls.ts";
import { AnswerWaits } from "./answer_waits.ts";
import { AgentFallback } from "./agent_fallback.ts";
import { callSlow, type SlowCallHost } from "./slow_call.ts";

export { agentClientOptionsSchema };
export type { AgentCallResult, AgentClientOptions, AgentClientStats };

const NO_OPTIONS: ClientCallOptions = {};
const NO_BYTES = new Uint8Array(0);

/** See the module documentation. Create with `connect("agent:NAME")`. */
export class AgentClient extends ClientBase<AgentCallResult> {
  readonly name: string;
  readonly #o: z.output<typeof agentClientOptionsSchema>;
  #port: AgentRingProducer | null;
  #joining: Promise<AgentRingProducer> | null = null;
  /** The calls in this client's slots (a table per joined ring). */
  #calls = new SlotCalls<AgentCallResult>(0);
  /** The request fields of the call being encoded (one object, refilled per call). */
  readonly #fields: RequestFields = {
    service: "",
    method: "",
    request: NO_BYTES,
    attachment: NO_BYTES,
    timeoutMs: 0,
  };
  /** A pump start is queued for the end of this turn (after every post of the turn). */
  #pumpOwed = false;
  #seq = 0;
  #pumping = false;
  /** The own connection for what the agent cannot take (null: no `fallback` given). */
  readonly #fallback: AgentFallback | null;
  #fabric = "agent";
  #closed = false;
  readonly #paths: Record<CallPath, number> = { EAGER: 0, LAZY: 0, BULK: 0, TCP_FALLBACK: 0 };
  #full = 0;
  #joins = 0;
  /** How this client waits for answers (naps, then parked waits). */
  readonly #waits: AnswerWaits;

  readonly #yieldCpu: () => void;
  /** What the slow path reads and calls of this client. */
  readonly #slow: SlowCallHost;

  /** @internal use `connect("agent:NAME")`. */
  constructor(
    name: string,
    port: AgentRingProducer,
    o: z.output<typeof agentClientOptionsSchema>,
    yieldCpu: () => void,
  ) {
    super();
    this.#yieldCpu = yieldCpu;
    this.name = name;
    this.#o = o;
    this.#waits = new AnswerWaits(o.napUs);
    this.#fallback = o.fallback ? new AgentFallback(o.fallback, o.fallbackOptions) : null;
    this.#port = null;
    this.#adopt(port);
    this.#slow = {
      name,
      timeoutMs: o.timeoutMs,
      fallback: this.#fallback,
      port: () => this.#port,
      join: () => this.#ensurePort(),
      calls: () => this.#calls,
      post: (p, k, len, deadline) =>
        p.post(k, len, ++this.#seq >>> 0) ? this.#pend(k, deadline) : null,
      countFull: () => void this.#full++,
    };
  }

  #adopt(port: AgentRingProducer): void {
    this.#port = port;
    this.#joins++;
    this.#calls = new SlotCalls(port.sizes.slots);
  }

  /** The remote fabric of the agent's last answer ("agent" before the first). */
  get fabric(): string {
    return this.#fabric;
  }

  async #ensurePort(): Promise<AgentRingProducer> {
    if (this.#closed) throw new VerbusError("CLOSED", `agent client "${this.name}" is closed`);
    if (this.#port) return this.#port;
    this.#joining ??= joinAgentRing(this.name).then((p) => {
      this.#adopt(p);
      return p;
    }).finally(() => (this.#joining = null));
    return await this.#joining;
  }

  /**
   * Makes one call through the agent; resolves like `Client.call` plus `via`. Joined, with a
   * free slot and a record that fits it, the call is encoded and posted at once and allocates
   * its promise (and, when its answer is read, the result); anything else takes the slow path.
   */
  call(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions = NO_OPTIONS,
  ): Promise<AgentCallResult> {
    const port = this.#port;
    if (
      port === null || this.#calls.freeSlots === 0 || options.userFields !== undefined ||
      options.requestId !== undefined
    ) return callSlow(this.#slow, service, method, request, options);
    let k = -1;
    try {
      const f = this.#fill(service, method, request, options);
      if (requestBytes(f) > port.slotData) {
        return callSlow(this.#slow, service, method, request, options);
      }
      k = this.#calls.takeFree();
      const len = encodeRequest(port.area(k)!, f);
      const seq = ++this.#seq >>> 0;
      if (len >= 0 && port.post(k, len, seq)) {
        return this.#pend(k, performance.now() + f.timeoutMs);
      }
      this.#calls.giveBack(k); // a name too long, or the ring FULL: the slow path says or waits
      return callSlow(this.#slow, service, method, request, options);
    } catch (e) {
      if (k >= 0) this.#calls.giveBack(k); // not posted: the slot is free again
      return Promise.reject(e); // as an async call would: a bad option fails the promise
    }
  }

  /** Fills the reused request fields of one call. */
  #fill(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions,
  ): RequestFields {
    const f = this.#fields;
    f.service = service;
    f.method = method;
    f.request = request;
    f.attachment = options.attachment ?? NO_BYTES;
    f.timeoutMs = options.timeoutMs ?? this.#o.timeoutMs;
    f.forcePath = options.forcePath;
    f.expectedResponseBytes = options.expectedResponseBytes;
    f.logId = options.logId;
    return f;
  }

  /** Slot k was posted: its caller's promise; the pump starts at the end of this turn. */
  #pend(k: number, deadline: number): Promise<AgentCallResult> {
    const p = this.#calls.add(k, deadline);
    if (!this.#pumping && !this.#pumpOwed) {
      this.#pumpOwed = true;
      queueMicrotask(this.#startPump);
    }
    return p;
  }

  readonly #startPump = (): void => {
    this.#pumpOwed = false;
    void this.#pump();
  };

  /** Reaps answered slots; returns how many calls completed. Main thread only. */
  progress(): number {
    const port = this.#port, calls = this.#calls;
    if (!port) return 0;
    let done = 0;
    for (let k = 0; k < calls.slots; k++) {
      if (calls.state(k) === SLOT_IDLE) continue;
      const len = port.ready(k);
      if (len < 0) continue;
      const was = calls.take(k);
      // Its caller gave up: nothing decoded, the slot is free again.
      const answer = was === SLOT_PENDING ? decodeAgentResult(port.response(k, len), len) : null;
      port.release(k);
      this.#calls.giveBack(k);
      if (answer === null) continue;
      done++;
      if (answer instanceof VerbusError) {
        calls.rejectTaken(k, answer);
        continue;
      }
      this.#paths[answer.path]++;
      this.#fabric = answer.fabric;
      calls.resolveTaken(k, answer);
    }
    return done;
  }

  /** Drives answers while calls are in flight: spins a few turns, then one parked futex wait. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      let lastWork = performance.now(), lastCheck = lastWork;
      // True when this thread owes the event loop a turn before it may nap: at the start (what
      // queued behind this pump runs first) and after answers were handed out.
      let owesTurn = true;
      // Abandoned slots (their caller's deadline passed) still come back: reap them too.
      while ((this.#calls.pending > 0 || this.#calls.abandoned > 0) && this.#port) {
        const port = this.#port;
        const seen = port.doorbell();
        if (this.progress() > 0) {
          lastWork = lastCheck = performance.now();
          owesTurn = true;
          continue;
        }
        const now = performance.now();
        this.#expire(now);
        if (now - lastCheck > 200) {
          lastCheck = now;
          const gone = port.agentGone();
          if (gone) {
            this.#fail(port, gone);
            break;
          }
        }
        // Poll on only with one call in flight: the agent defers the wake-up of a producer with
        // more until half of them are answered, so polling between would spend this process's
        // CPU (and the core the agent needs) on answers that come in batches anyway.
        if (now - lastWork < this.#o.idleAfterMs && this.#calls.pending <= 1) {
          this.#yieldCpu(); // answers are due: poll, giving the core away between looks
          await new Promise((r) => setImmediate(r));
          continue;
        }
        // Answers were just handed to their callers: let them run (and post their next calls)
        // before this thread blocks, or the nap would hold back what feeds the agent.
        if (owesTurn) {
          owesTurn = false;
          await new Promise((r) => setImmediate(r));
          continue;
        }
        // Nap (this thread blocks until the agent's wake-up, bounded) or park off-thread.
        const parked = this.#waits.wait(port, seen);
        if (parked) await parked;
      }
    } finally {
      this.#pumping = false;
    }
  }

  #expire(now: number): void {
    this.#calls.expire(now, () => new TimeoutError(`call through agent "${this.name}" timed out`));
  }

  /** The agent went away: every call in flight fails; the next call joins again. */
  #fail(port: AgentRingProducer, why: string): void {
    this.#port = null;
    port.close();
    const e = new VerbusError(
      "CONNECTION_CLOSED",
      `agent "${this.name}": ${why}; the call was not answered`,
    );
    this.#calls.failAll(e);
  }

  /** Local counters and the agent ring's. */
  stats(): AgentClientStats {
    return {
      fabric: this.#fabric,
      calls: { ...this.#paths },
      direct: this.#fallback?.calls ?? 0,
      full: this.#full,
      joins: this.#joins,
      waits: { naps: this.#waits.naps, napMisses: this.#waits.napMisses, parks: this.#waits.parks },
      ring: this.#port?.counters() ?? null,
    };
  }

  /** Human-readable stats. */
  formatStats(): string {
    const s = this.stats();
    return [
      `agent        ${this.name} (remote fabric ${s.fabric}; joined ${s.joins}×)`,
      `calls        ${Object.entries(s.calls).map(([p, n]) => `${p} ${n}`).join(", ")}`,
      `direct       ${s.direct}    ring full ${s.full}`,
      ...(s.ring
        ? [`agent ring   ${Object.entries(s.ring).map(([k, v]) => `${k} ${v}`).join(", ")}`]
        : []),
    ].join("\n");
  }

  /** Leaves the agent's ring (calls in flight fail with CLOSED) and closes the fallback. Safe twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const port = this.#port;
    if (port) this.#fail(port, "the client was closed");
    await this.#fallback?.close();
  }
}

/** Joins agent `name` (`connect("agent:NAME")`). Throws NOT_FOUND when no agent runs by that name. */
export async function connectAgent(
  name: string,
  options: AgentClientOptions = {},
): Promise<AgentClient> {
  const o = parseOptions(agentClientOptionsSchema, options, 'connect("agent:…") options');
  return new AgentClient(name, await joinAgentRing(name), o, await cpuYielder());
}
