/**
 * Explicit handshake state machines: named states (brpc's), the transitions each side may take,
 * and a history that says why each transition happened. Fallback to TCP is a state, entered
 * with its reason, logged once — never silently.
 *
 * Threading: a machine belongs to the one handshake (one JS thread) that drives it.
 * @module
 */
import { StateMachine } from "../../../util/state_machine.ts";

export { StateMachine, type Transition } from "../../../util/state_machine.ts";

/** Client states, brpc's names. */
export type ClientState =
  | "C_HELLO_SEND"
  | "C_HELLO_WAIT"
  | "C_SETUP"
  | "C_ACK_SEND"
  | "ESTABLISHED"
  | "FALLBACK_TCP"
  | "FAILED";

/** Server states, brpc's names. */
export type ServerState =
  | "S_HELLO_WAIT"
  | "S_SETUP"
  | "S_HELLO_SEND"
  | "S_ACK_WAIT"
  | "ESTABLISHED"
  | "FALLBACK_TCP"
  | "FAILED";

const CLIENT: Record<ClientState, readonly ClientState[]> = {
  C_HELLO_SEND: ["C_HELLO_WAIT", "FALLBACK_TCP", "FAILED"],
  C_HELLO_WAIT: ["C_SETUP", "FALLBACK_TCP", "FAILED"],
  C_SETUP: ["C_ACK_SEND", "FALLBACK_TCP", "FAILED"],
  C_ACK_SEND: ["ESTABLISHED", "FALLBACK_TCP", "FAILED"],
  ESTABLISHED: ["FALLBACK_TCP", "FAILED"],
  FALLBACK_TCP: [],
  FAILED: [],
};

const SERVER: Record<ServerState, readonly ServerState[]> = {
  S_HELLO_WAIT: ["S_SETUP", "FALLBACK_TCP", "FAILED"],
  S_SETUP: ["S_HELLO_SEND", "FALLBACK_TCP", "FAILED"],
  S_HELLO_SEND: ["S_ACK_WAIT", "FALLBACK_TCP", "FAILED"],
  S_ACK_WAIT: ["ESTABLISHED", "FALLBACK_TCP", "FAILED"],
  ESTABLISHED: ["FALLBACK_TCP", "FAILED"],
  FALLBACK_TCP: [],
  FAILED: [],
};

/** A client handshake machine. */
export function clientMachine(
  name: string,
  log?: (line: string) => void,
): StateMachine<ClientState> {
  return new StateMachine<ClientState>(name, "C_HELLO_SEND", CLIENT, log);
}

/** A server handshake machine. */
export function serverMachine(
  name: string,
  log?: (line: string) => void,
): StateMachine<ServerState> {
  return new StateMachine<ServerState>(name, "S_HELLO_WAIT", SERVER, log);
}
