/**
 * Terminal conventions of the `verbus` command line: color only when the stream is a terminal
 * and `NO_COLOR` is unset or empty (https://no-color.org), and the one way every command reports
 * an error on stderr (a JSON line with `--json`). CLI only; the main JS thread.
 * @module
 */
import { isatty } from "node:tty";
import { getEnv } from "../util/runtime.ts";

/** The two output streams a command writes to. */
export type Stream = "stdout" | "stderr";

/** True when `stream` may carry ANSI color: a terminal, and `NO_COLOR` unset or empty. */
export function useColor(stream: Stream): boolean {
  if ((getEnv("NO_COLOR") ?? "") !== "") return false;
  try {
    return isatty(stream === "stdout" ? 1 : 2);
  } catch {
    return false;
  }
}

const CODES = { red: 31, green: 32, yellow: 33, bold: 1, dim: 2 } as const;

/** A style name of {@link paint}. */
export type Style = keyof typeof CODES;

/** `text` in `style` when `stream` may carry color (see {@link useColor}), else `text` unchanged. */
export function paint(stream: Stream, style: Style, text: string): string {
  return useColor(stream) ? `\x1b[${CODES[style]}m${text}\x1b[0m` : text;
}

/** True when the argv asks for machine output (`--json` or `--json=true`). */
export function wantsJson(args: readonly string[]): boolean {
  return args.some((a) => a === "--json" || a === "--json=true");
}

/**
 * Reports a failure on stderr: `verbus <command>: <message>` (the prefix red on a terminal), or
 * with `json` one line `{"ok":false,"command":…,"error":…,"exit":…}`. Returns `exit`.
 */
export function reportError(
  command: string,
  message: string,
  exit: number,
  json: boolean,
  detail?: string,
): number {
  if (json) {
    console.error(JSON.stringify({ ok: false, command, error: message, exit }));
  } else {
    const prefix = paint("stderr", "red", command ? `verbus ${command}:` : "verbus:");
    console.error(`${prefix} ${message}${detail ? `\n\n${detail}` : ""}`);
  }
  return exit;
}
