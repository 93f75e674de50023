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

/** A pending stop: `stopped` resolves with the signal's name; `dispose` removes the listeners. */
export interface StopSignal {
  readonly stopped: Promise<"SIGINT" | "SIGTERM">;
  dispose(): void;
}

/** Listens for SIGINT and SIGTERM now (see the module documentation). */
function stopSignal(): StopSignal {
  // deno-lint-ignore no-explicit-any
  const proc = (globalThis as any).process;
  let onInt = () => {}, onTerm = () => {};
  const stopped = new Promise<"SIGINT" | "SIGTERM">((resolve) => {
    onInt = () => resolve("SIGINT");
    onTerm = () => resolve("SIGTERM");
  });
  proc.once("SIGINT", onInt);
  proc.once("SIGTERM", onTerm);
  return {
    stopped,
    dispose() {
      proc.off("SIGINT", onInt);
      proc.off("SIGTERM", onTerm);
    },
  };
}

/**
 * Runs a long-running command's work with the stop listeners in place from the start (see the
 * module documentation); `work` awaits `stop.stopped` once it is ready. The listeners go when it
 * ends, however it ends.
 */
export async function withStopSignal<T>(work: (stop: StopSignal) => Promise<T>): Promise<T> {
  const stop = stopSignal();
  try {
    return await work(stop);
  } finally {
    stop.dispose();
  }
}
