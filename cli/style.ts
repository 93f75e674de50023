/**
 * Terminal conventions of the `verbus` command line: color through the platform's
 * `node:util` `styleText` (Deno and Bun alike), which colors a stream only when it is a terminal
 * and honours `NO_COLOR` (https://no-color.org; set and not empty: no color) and `FORCE_COLOR`
 * (color even into a pipe; `FORCE_COLOR=0`: none) — and the one way every command reports an error
 * on stderr (a JSON line with `--json`). CLI only; the main JS thread.
 * @module
 */
import process from "node:process";
import { styleText } from "node:util";

/** The two output streams a command writes to. */
export type Stream = "stdout" | "stderr";

/** A style name of {@link paint}. */
export type Style = "red" | "green" | "yellow" | "bold" | "dim";

/**
 * `text` in `style` when `stream` may carry color (a terminal, or `FORCE_COLOR`; never with
 * `NO_COLOR` alone), else `text` unchanged.
 */
export function paint(stream: Stream, style: Style, text: string): string {
  return styleText(style, text, { stream: process[stream] });
}

/** True when the argv asks for machine output (`--json` or `--json=true`). */
export function wantsJson(args: readonly string[]): boolean {
  return args.some((a) => a === "--json" || a === "--json=true");
}

/**
 * Reports a failure on stderr: `verbus <command>: <message>` (the prefix red on a terminal) and
 * the lines of `detail` after it, or with `json` one line
 * `{"ok":false,"command":…,"error":…,"exit":…}`. Returns `exit`.
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
    console.error(`${prefix} ${message}${detail ? `\n${detail}` : ""}`);
  }
  return exit;
}
