/**
 * The client half of the fabric handshake, an explicit state machine:
 * `C_HELLO_SEND → C_HELLO_WAIT → C_SETUP → C_ACK_SEND → ESTABLISHED`, or `FALLBACK_TCP` with its
 * reason (logged once, never silently), or `FAILED`. It runs over the channel's TCP connection as
 * calls to `verbus.Fabric`: a stock brpc server refuses the hello (ENOMETHOD "Fail to find
 * method=verbus.Fabric/Hello" from brpc, which looks a dotted service up by its full method name;
 * ENOSERVICE from verbus's own dispatcher) and the client stays on TCP.
 * The chosen fabric's provider (`transport/provider.ts`) connects to the server's offer and
 * yields a connected endpoint before the client ACKs.
 *
 * Threading: one JS thread (the client's); control path.
 * @module
 */
import { pid } from "node:process";
import { ConnectionClosedError, VerbusError } from "../../../errors.ts";
import type { FabricEndpoint } from "../../../transport/fabric.ts";
import { failingNthOp } from "../../../transport/faults.ts";
import type { ClientFabricProvider, SessionSizes } from "../../../transport/provider.ts";
import type { AnyFabricDescriptor } from "../../../transport/fabric_descriptor.ts";
import type { FabricChoice } from "../../../transport/fabric_kinds.ts";
import { clientProviders, fabricsWith } from "../../../transport/registry.ts";
import type { Channel } from "../../tcp/channel.ts";
import { MAX_TIMER } from "../../tcp/channel_options.ts";
import { ENOMETHOD, ENOSERVICE, EREQUEST, RpcError } from "../../errors.ts";
import type { Logger } from "../../protocol/dispatch.ts";
import { computeLayout, type RegionConfigInput } from "../../region/layout.ts";
import { ClientSession } from "../client/client_session.ts";
import {
  ACK_OFF,
  ACK_ON,
  bootId,
  byeSchema,
  type ClientHello,
  decodeHello,
  encodeAck,
  encodeBye,
  encodeHello,
  FABRIC_SERVICE,
  HELLO_VERSION,
  HelloVersionError,
  type ServerHello,
  serverHelloSchema,
} from "./hello.ts";
import { firstFallbackOf } from "./peer_fallback_log.ts";
import { clientMachine, type ClientState } from "./state_machine.ts";
import { libraryLogger } from "../../../util/log.ts";

/** What the handshake produced. */
export interface FabricOutcome {
  session: ClientSession | null;
  /** "shm", "verbs", "urma", "urma (simulated)" or "tcp". */
  fabricLabel: string;
  summary: {
    state: ClientState;
    reason?: string;
    decisions?: ServerHello["decisions"];
    history: { from: ClientState; to: ClientState; reason?: string }[];
  };
}

/** The options the handshake reads. */
export interface HandshakeOptions {
  fabric: FabricChoice;
  /** Fabric descriptors beside the registered ones (`auto` offers them after those). */
  extraFabrics?: readonly AnyFabricDescriptor[];
  region: RegionConfigInput;
  refreshEvery: number;
  /**
   * Fault injection: `opFail` N makes the session's Nth fabric operation fail inside the
   * endpoint (transport/faults.ts); `fabricDown` takes the session down as soon as it is
   * established (the server is told, calls go over TCP, the client re-negotiates later).
   */
  faults: { serverPressure?: "ring" | "objpool"; opFail?: number; fabricDown?: boolean };
  logger?: Logger;
  timeoutMs: number;
  /**
   * Per-fabric provider options keyed by fabric (e.g. `verbs: { sourceAddr }`); each provider
   * gets its own part.
   */
  providerOptions?: Record<string, unknown>;
}

/** Runs the handshake on `channel`. Never throws for a refusal: the outcome says FALLBACK_TCP. */
export async function establishFabric(
  channel: Channel,
  options: HandshakeOptions,
): Promise<FabricOutcome> {
  const log = (line: string) => (options.logger ?? libraryLogger()).warn(line);
  // A peer that has no fabric for us (or speaks another hello) is said at warn once per process.
  let quiet = false;
  const machineLog = (line: string) => {
    if (!quiet) return log(line);
    (options.logger ?? libraryLogger()).info?.(line);
  };
  const peer = `${channel.host}:${channel.port}`;
  const machine = clientMachine(`fabric handshake with ${peer}`, machineLog);
  const done = (
    session: ClientSession | null,
    label: string,
    decisions?: ServerHello["decisions"],
  ): FabricOutcome => {
    const last = machine.history[machine.history.length - 1];
    return {
      session,
      fabricLabel: label,
      summary: {
        state: machine.state,
        ...(last?.reason ? { reason: last.reason } : {}),
        ...(decisions ? { decisions } : {}),
        history: [...machine.history],
      },
    };
  };
  if (options.fabric === "tcp") {
    // Chosen by the user: not a fallback worth a log line.
    return {
      session: null,
      fabricLabel: "tcp",
      summary: { state: "FALLBACK_TCP", reason: "fabric: tcp (chosen)", history: [] },
    };
  }
  const fabrics = fabricsWith(options.extraFabrics);
  if (typeof fabrics === "string") throw new VerbusError("INVALID_OPTIONS", fabrics);
  if (options.fabric !== "auto" && !fabrics.some((d) => d.kind === options.fabric)) {
    const kinds = fabrics.map((d) => d.kind).join(", ");
    throw new VerbusError(
      "INVALID_OPTIONS",
      `connect() options: field fabric: unknown fabric ${options.fabric}: expected auto, tcp or one of ${kinds}`,
    );
  }
  const kinds = options.fabric === "auto" ? fabrics.map((d) => d.kind) : [options.fabric];
  const { providers, refused } = await clientProviders(
    kinds,
    options.providerOptions ?? {},
    fabrics,
  );
  if (providers.length === 0) {
    const why = Object.entries(refused).map(([k, r]) => `${k}: ${r}`).join("; ");
    machine.to("FALLBACK_TCP", why || "no fabric to offer");
    return done(null, "tcp");
  }
  const closeAll = (keep?: ClientFabricProvider) =>
    providers.forEach((p) => p !== keep && p.close());
  const hello: ClientHello = {
    version: HELLO_VERSION,
    bootId: bootId(),
    pid,
    fabrics: providers.map((p) => p.kind),
    region: options.region,
    params: Object.fromEntries(providers.map((p) => [p.kind, p.params()])),
    ...(options.faults.serverPressure
      ? { simulate: { serverPressure: options.faults.serverPressure } }
      : {}),
  };
  machine.to("C_HELLO_WAIT");
  let reply: ServerHello;
  try {
    const r = await channel.call(FABRIC_SERVICE, "Hello", encodeHello(hello), {
      timeoutMs: options.timeoutMs,
    });
    reply = decodeHello(serverHelloSchema, r.response, "server hello", "server");
  } catch (e) {
    closeAll();
    const noFabric = e instanceof RpcError &&
      (e.errorCode === ENOSERVICE || e.errorCode === ENOMETHOD);
    const otherVersion = e instanceof HelloVersionError || olderServer(e);
    const reason = noFabric
      ? "the server offers no verbus fabric (a stock brpc server?)"
      : otherVersion && !(e instanceof HelloVersionError)
      ? `the server refused this client's hello version ${HELLO_VERSION} (an older verbus: ` +
        `its region layout differs), staying on TCP: ${(e as Error).message}`
      : `hello failed: ${(e as Error).message}`;
    quiet = (noFabric || otherVersion) && !firstFallbackOf(peer);
    machine.to("FALLBACK_TCP", reason);
    return done(null, "tcp");
  }
  if (reply.fabric === null) {
    closeAll();
    const reasons = Object.entries(reply.decisions).map(([f, d]) =>
      `${f} ${d.state}${d.reason ? ` (${d.reason})` : ""}`
    );
    machine.to(
      "FALLBACK_TCP",
      `server refused every fabric: ${reasons.join("; ") || "none offered"}`,
    );
    return done(null, "tcp", reply.decisions);
  }
  machine.to("C_SETUP");
  const provider = providers.find((p) => p.kind === reply.fabric);
  closeAll(provider);
  let session: ClientSession;
  let endpoint: FabricEndpoint | undefined;
  try {
    if (!provider) throw new Error(`server chose ${reply.fabric}, which this client did not offer`);
    const serverLayout = computeLayout("server", reply.region);
    const clientLayout = computeLayout("client", reply.region);
    const sizes: SessionSizes = {
      server: serverLayout.size,
      client: clientLayout.size,
      maxMessage: reply.region.slotSize,
    };
    endpoint = await provider.open(reply.offer, sizes);
    if (options.faults.opFail) endpoint = failingNthOp(endpoint, options.faults.opFail);
    const sessionId = reply.sessionId;
    session = new ClientSession({
      endpoint,
      server: serverLayout,
      client: clientLayout,
      methods: reply.methods,
      refreshEvery: options.refreshEvery,
      onFail: (reason) => {
        log(
          `fabric session with ${channel.host}:${channel.port} failed, calls go over TCP: ${reason}`,
        );
        // Tell the server, so it releases the session now (it may already be gone: no matter).
        channel.call(FABRIC_SERVICE, "Bye", encodeBye({ sessionId, reason }), {
          timeoutMs: options.timeoutMs,
        }).catch(() => {});
      },
    });
  } catch (e) {
    endpoint?.close();
    provider?.close();
    const reason = (e as Error).message;
    await channel.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF), { timeoutMs: options.timeoutMs })
      .catch(
        () => {},
      );
    machine.to("FALLBACK_TCP", reason);
    return done(null, "tcp", reply.decisions);
  }
  machine.to("C_ACK_SEND");
  try {
    await channel.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON), { timeoutMs: options.timeoutMs });
  } catch (e) {
    session.close();
    machine.to("FALLBACK_TCP", `ACK refused: ${(e as Error).message}`);
    return done(null, "tcp", reply.decisions);
  }
  machine.to("ESTABLISHED");
  watchSession(channel, session, reply.sessionId);
  if (options.faults.fabricDown) session.fail("simulated fabric down (faults.fabricDown)");
  return done(session, provider.label, reply.decisions);
}

/**
 * Keeps one `verbus.Fabric/Watch` call open on the channel (no deadline): the server answers it
 * when it ends session `sessionId` for a reason of its own (its endpoint failed, the server is
 * closing…), and the session then fails here at once: calls in flight the server never took are
 * redone over TCP (exactly once: the session is closed for good), the others reject with a FABRIC
 * error naming the reason; later calls go over TCP and the link re-negotiates. An answer after the
 * client itself ended the session changes nothing; a server without Watch only loses the notice,
 * and a connection that breaks fails the session (its server is gone). While it is open, a session
 * that fails on this side waits briefly for this notice before failing its calls
 * (`server_notice_wait.ts`): the server may know better why.
 */
function watchSession(channel: Channel, session: ClientSession, sessionId: number): void {
  session.watching = true;
  channel.call(FABRIC_SERVICE, "Watch", encodeBye({ sessionId, reason: "watch" }), {
    timeoutMs: MAX_TIMER,
  }).then((r) => {
    let reason: string, untaken: readonly (readonly [number, number])[] = [];
    try {
      const bye = decodeHello(byeSchema, r.response, "server notice");
      reason = bye.reason;
      untaken = bye.untaken ?? [];
    } catch (e) {
      reason = `an unreadable notice (${(e as Error).message})`;
    }
    session.serverEnded(reason, untaken);
    session.watching = false;
  }, (e) => {
    session.watching = false;
    // The connection broke (the server was killed, its host went away): the session's peer went
    // with it, and nothing else would end the calls in flight on it before their deadlines.
    if (e instanceof ConnectionClosedError) {
      session.fail(`the connection to the server broke (${e.message})`);
    }
  });
}

/**
 * Whether `e` is an older verbus server's refusal of this client's hello version: it answers
 * EREQUEST naming the hello's field version (its schema takes only its own version).
 */
function olderServer(e: unknown): boolean {
  return e instanceof RpcError && e.errorCode === EREQUEST &&
    e.errorText.includes("client hello: field version");
}
