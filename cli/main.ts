/**
 * `verbus` — the command line. Runs as `deno run -A cli/main.ts <command>` or
 * `bun cli/main.ts <command>`; each command lives in its own file and is loaded on demand. The
 * CLI uses only the public API (`mod.ts`) and the example services (`examples/demo/mod.ts`).
 *
 * Commands: `doctor`, `serve`, `call`, `agent` (see `verbus <command> --help`).
 * @module
 */
import { RUNTIME } from "../util/runtime.ts";

const USAGE = `usage: verbus <command> [options]

commands:
  doctor   what this host can do: runtime, helper, libibverbs / librdmacm / liburma, devices
  serve    run a verbus server (TCP baidu_std; fabrics where the host has them)
  call     call a verbus (or brpc) server
  agent    share one connection to a remote server among this host's processes

run 'verbus <command> --help' for the options of one command.`;

/** The process arguments after the script, on either runtime. */
function cliArgs(): string[] {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  return RUNTIME === "deno" ? [...g.Deno.args] : g.process.argv.slice(2);
}

/** Exit the process (CLI only: library code never exits). */
export function exit(code: number): never {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  if (RUNTIME === "deno") g.Deno.exit(code);
  g.process.exit(code);
  throw new Error("unreachable");
}

const COMMANDS: Record<string, () => Promise<{ main(args: string[]): Promise<number> }>> = {
  doctor: () => import("./doctor.ts"),
  serve: () => import("./serve.ts"),
  call: () => import("./call.ts"),
  agent: () => import("./agent.ts"),
};

/** Runs the command line and returns the exit code (the compiled binary calls this too). */
export async function main(): Promise<number> {
  const [command, ...rest] = cliArgs();
  if (!command || command === "--help" || command === "-h" || command === "help") {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  const load = COMMANDS[command];
  if (!load) {
    console.error(`verbus: unknown command '${command}'\n\n${USAGE}`);
    return 2;
  }
  const mod = await load();
  return await mod.main(rest);
}

if (import.meta.main) {
  try {
    exit(await main());
  } catch (e) {
    console.error(`verbus: ${e instanceof Error ? e.message : String(e)}`);
    exit(1);
  }
}
