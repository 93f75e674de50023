/**
 * URMA errors with their names: `urma_status_t` results (errno values, URMA_FAIL = 0x1000) as
 * {@link UrmaStatusError}, completion statuses (`urma_cr_status_t`) as {@link UrmaCompletionError}.
 * With the simulator, messages carry its own explanation (`urma_sim_last_error`).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { URMA_CR_STATUS, URMA_STATUS } from "../../ffi/symbols/liburma.ts";

/** urma_cr_status_t values by name. */
export const URMA_CR = {
  SUCCESS: 0,
  UNSUPPORTED_OPCODE_ERR: 1,
  LOC_LEN_ERR: 2,
  LOC_OPERATION_ERR: 3,
  LOC_ACCESS_ERR: 4,
  REM_RESP_LEN_ERR: 5,
  REM_UNSUPPORTED_REQ_ERR: 6,
  REM_OPERATION_ERR: 7,
  REM_ACCESS_ABORT_ERR: 8,
  ACK_TIMEOUT_ERR: 9,
  RNR_RETRY_CNT_EXC_ERR: 10,
  WR_FLUSH_ERR: 11,
  WR_SUSPEND_DONE: 12,
  WR_FLUSH_ERR_DONE: 13,
  WR_UNHANDLED: 14,
  LOC_DATA_POISON: 15,
  REM_DATA_POISON: 16,
} as const;

/** The name of a `urma_status_t`, e.g. `statusName(22) === "URMA_EINVAL"`. */
export function statusName(status: number): string {
  return URMA_STATUS[status] ?? `urma_status ${status}`;
}

/** The name of a completion status, e.g. `crStatusName(8) === "URMA_CR_REM_ACCESS_ABORT_ERR"`. */
export function crStatusName(status: number): string {
  const n = URMA_CR_STATUS[status];
  return n ? `URMA_CR_${n}` : `URMA_CR status ${status}`;
}

/** A liburma call returned a non-zero `urma_status_t` (or NULL with that errno). */
export class UrmaStatusError extends VerbusError {
  /** The liburma function, e.g. `urma_create_jetty`. */
  readonly fn: string;
  /** The urma_status_t / errno value (0 when the library gave none). */
  readonly status: number;
  /** Its name, e.g. `URMA_EINVAL`. */
  readonly statusName: string;

  constructor(fn: string, status: number, what: string, detail = "") {
    const name = statusName(status);
    super(
      "NATIVE_CALL",
      `${fn} failed${status ? ` with ${name} (${status})` : ""}: ${what}${
        detail ? ` — ${detail}` : ""
      }`,
      {
        context: { fn, status, statusName: name },
      },
    );
    this.fn = fn;
    this.status = status;
    this.statusName = name;
  }
}

/** A work request completed with an error status. */
export class UrmaCompletionError extends VerbusError {
  /** The urma_cr_status_t value. */
  readonly status: number;
  /** Its name, e.g. `URMA_CR_REM_ACCESS_ABORT_ERR`. */
  readonly statusName: string;
  /** The request's user_ctx (wr id). */
  readonly userCtx: number;

  constructor(status: number, userCtx: number, what: string) {
    const name = crStatusName(status);
    super("FABRIC", `URMA request ${userCtx} completed with ${name}: ${what}`, {
      context: { status, statusName: name, userCtx },
    });
    this.status = status;
    this.statusName = name;
    this.userCtx = userCtx;
  }
}

/** liburma's ABI is not one verbus can use (24.12, a future release, or unknown). */
export class UrmaAbiError extends VerbusError {
  constructor(message: string, readonly path: string) {
    super("NO_DEVICE", message, { context: { path } });
  }
}
