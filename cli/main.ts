/**
 * `verbus` — the command line. Runs as `deno run -A cli/main.ts <command>` or
 * `bun cli/main.ts <command>`; each command lives in its own file and is loaded on demand. The
 * CLI uses only the public API (`mod.ts`) and the example services (`examples/demo/mod.ts`).
 *
 * Conventions (every command): `--help` (or `verbus help COMMAND`) prints its usage on stdout
 * and exits 0; `--json` makes its output machine-readable (errors too: one JSON line on stderr);
 * exit codes are 0 ok, 1 a call / connection / run failed, 2 usage (bad command line); errors go
 * to stderr, a usage error in one line and where to read more (`see: verbus help call`); color only
 * on a terminal (or with `FORCE_COLOR`), never with `NO_COLOR` alone.
 * @module
 */
import { RUNTIME, runtimeVersion } from "../util/runtime.ts";
import { EXIT_FAILED, usageError } from "./options.ts";
import { didYouMean } from "./did_you_mean.ts";
import { paint, reportError, wantsJson } from "./style.ts";
import { VERSION } from "./version.ts";

/** One command: what it does (for the usage) and its module, loaded on demand. */
interface Command {
  readonly summary: string;
  readonly load: () => Promise<{ main(args: string[]): Promise<number> }>;
}

const COMMANDS: Record<string, Command> = {
  doctor: {
    summary: "what this host can do: runtime, helper, libibverbs / librdmacm / liburma, devices",
    load: () => import("./doctor.ts"),
  },
  serve: {
    summary: "run a verbus server (TCP baidu_std; fabrics where the host has them)",
    load: () => import("./serve.ts"),
  },
  call: { summary: "call a verbus (or brpc) server", load: () => import("./call.ts") },
  agent: {
    summary: "share one connection to a remote server among this host's processes",
    load: () => import("./agent.ts"),
  },
  bench: {
    summary:
      "the standard benchmark matrix (fabrics x paths x in flight x clients), table / JSON / SVG",
    load: () => import("./bench.ts"),
  },
};

/** The usage of `verbus` itself. */
function usage(): string {
  const names = Object.keys(COMMANDS);
  const w = Math.max(...names.map((n) => n.length));
  return [
    `${paint("stdout", "bold", "usage:")} verbus <command> [options]`,
    "       verbus help <command>      verbus --version [--json]",
    "",
    "commands:",
    ...names.map((n) => `  ${n.padEnd(w)}  ${COMMANDS[n].summary}`),
    "",
    "every command takes --help and --json; exit codes: 0 ok, 1 failed, 2 usage.",
    "run 'verbus help <command>' for the options of one command.",
  ].join("\n");
}

/** " (did you mean 'serve'?)" when `typed` is close to a command's name, else "". */
function near(typed: string): string {
  const c = didYouMean(typed, Object.keys(COMMANDS));
  return c ? ` (did you mean '${c}'?)` : "";
}

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

/**
 * Runs the command line `argv` (default: the process arguments) and returns the exit code (the
 * compiled binary calls this too). A command's uncaught error is reported on stderr, exit 1.
 */
export async function main(argv: string[] = cliArgs()): Promise<number> {
  const [command, ...rest] = argv;
  const json = wantsJson(argv);
  if (command === "--version" || command === "-V" || command === "version") {
    const runtime = `${RUNTIME} ${runtimeVersion()}`;
    console.log(
      json
        ? JSON.stringify({ verbus: VERSION, runtime: RUNTIME, runtimeVersion: runtimeVersion() })
        : `verbus ${VERSION} (${runtime})`,
    );
    return 0;
  }
  if (command === "--help" || command === "-h") {
    console.log(usage());
    return 0;
  }
  if (command === "help") {
    const [topic] = rest.filter((a) => !a.startsWith("--"));
    if (!topic) {
      console.log(usage());
      return 0;
    }
    const c = COMMANDS[topic];
    if (!c) return usageError("", new Error(`no command '${topic}'${near(topic)}`), json);
    return await (await c.load()).main(["--help"]);
  }
  if (!command || command.startsWith("-")) {
    const why = command
      ? `unknown option ${command}`
      : `no command given (${Object.keys(COMMANDS).join(", ")})`;
    return usageError("", new Error(why), json);
  }
  const c = COMMANDS[command];
  if (!c) return usageError("", new Error(`unknown command '${command}'${near(command)}`), json);
  try {
    return await (await c.load()).main(rest);
  } catch (e) {
    return reportError(command, e instanceof Error ? e.message : String(e), EXIT_FAILED, json);
  }
}

if (import.meta.main) exit(await main());
