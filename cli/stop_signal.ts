/**
 * SIGINT / SIGTERM for the long-running commands (`verbus serve`, `verbus agent`). Call it first,
 * before the command starts its work: the listeners are then in place long before the ready line,
 * so a signal sent the moment that line is out (a supervisor, a test) stops the command
 * gracefully. Installed after the ready line, a SIGTERM sent the moment it was out sometimes
 * killed the process outright (on Deno and on Bun; once on Deno the signal was swallowed and the
 * agent kept running), leaving `verbus agent`'s record behind. A signal during the
 * setup is kept and answered once the command waits for it.
 *
 * Threading: the main thread; one per command run.
 * @module
 */

/** Why a command stops: a signal, or (with `exitWithStdin`) its standard input closed. */
export type StopReason = "SIGINT" | "SIGTERM" | "stdin closed";

/** A pending stop: `stopped` resolves with the reason; `dispose` removes the listeners. */
export interface StopSignal {
  readonly stopped: Promise<StopReason>;
  dispose(): void;
}

/** What else than SIGINT / SIGTERM stops the command. */
export interface StopOptions {
  /**
   * Stop when standard input reaches its end: a parent that holds a pipe to it open (and never
   * writes) gets the command stopped however the parent ends — SIGKILL included, which no
   * handler of the parent can answer.
   */
  exitWithStdin?: boolean;
}

/** Listens for SIGINT and SIGTERM (and the end of stdin) now (see the module documentation). */
function stopSignal(options: StopOptions): StopSignal {
  // deno-lint-ignore no-explicit-any
  const proc = (globalThis as any).process;
  let onInt = () => {}, onTerm = () => {}, onEnd = () => {};
  const stopped = new Promise<StopReason>((resolve) => {
    onInt = () => resolve("SIGINT");
    onTerm = () => resolve("SIGTERM");
    onEnd = () => resolve("stdin closed");
  });
  proc.once("SIGINT", onInt);
  proc.once("SIGTERM", onTerm);
  if (options.exitWithStdin) {
    proc.stdin.once("end", onEnd);
    proc.stdin.resume();
  }
  return {
    stopped,
    dispose() {
      proc.off("SIGINT", onInt);
      proc.off("SIGTERM", onTerm);
      if (options.exitWithStdin) {
        proc.stdin.off("end", onEnd);
        proc.stdin.pause();
      }
    },
  };
}

/**
 * Runs a long-running command's work with the stop listeners in place from the start (see the
 * module documentation); `work` awaits `stop.stopped` once it is ready. The listeners go when it
 * ends, however it ends.
 */
export async function withStopSignal<T>(
  work: (stop: StopSignal) => Promise<T>,
  options: StopOptions = {},
): Promise<T> {
  const stop = stopSignal(options);
  try {
    return await work(stop);
  } finally {
    stop.dispose();
  }
}
