/**
 * verbus's logger with levels: `debug` < `info` < `warn` < `error` (< `silent`). One place
 * decides what is written: {@link createLogger} drops lines below its level, which is the
 * `VERBUS_LOG_LEVEL` environment variable when set, else the caller's default — `warn` for the
 * library ({@link libraryLogger}: a library says nothing of routine events unless asked), `info`
 * for the CLI. Text lines read `<name>: <message>`; under `json` each line is one JSON object
 * (`{"level","name","msg","time"}`), for `--json` output where stderr too must parse.
 *
 * The objects it makes satisfy the `logger` option of `serve()` / `connect()` (`warn` required;
 * `info`, `error`, `debug` optional), so a user's own `{ warn }` object keeps working there.
 * Any thread; a logger writes synchronously to stderr unless given a `write`.
 * @module
 */
import { getEnv } from "./runtime.ts";

/** The levels, least severe first; `silent` writes nothing. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = typeof LOG_LEVELS[number];

/** A logger with every level (what {@link createLogger} returns). */
export interface LeveledLogger {
  /** Lines below this level are dropped. */
  readonly level: LogLevel;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /** The prefix of text lines and the `name` of JSON lines (default `verbus`). */
  name?: string;
  /** The level when `VERBUS_LOG_LEVEL` is not set (default `warn`). */
  level?: LogLevel;
  /** One JSON object per line instead of text (default false). */
  json?: boolean;
  /** Where each finished line goes (default: stderr). */
  write?: (line: string) => void;
}

function isLevel(s: string | undefined): s is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(s ?? "");
}

/**
 * The level in force: `VERBUS_LOG_LEVEL` (one of {@link LOG_LEVELS}) when set and valid, else
 * `fallback`.
 */
export function effectiveLevel(fallback: LogLevel): LogLevel {
  const env = getEnv("VERBUS_LOG_LEVEL")?.trim().toLowerCase();
  return isLevel(env) ? env : fallback;
}

function stderrLine(line: string): void {
  console.error(line);
}

/** Makes a logger; see the module doc for the level and the line formats. */
export function createLogger(options: CreateLoggerOptions = {}): LeveledLogger {
  const name = options.name ?? "verbus";
  const level = effectiveLevel(options.level ?? "warn");
  const min = LOG_LEVELS.indexOf(level);
  const write = options.write ?? stderrLine;
  const json = options.json ?? false;
  const emit = (at: Exclude<LogLevel, "silent">) => (message: string) => {
    if (LOG_LEVELS.indexOf(at) < min) return;
    write(
      json
        ? JSON.stringify({ level: at, name, msg: message, time: new Date().toISOString() })
        : `${name}: ${message}`,
    );
  };
  return {
    level,
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
  };
}

let library: LeveledLogger | undefined;

/**
 * The logger the library uses when the caller gave none: `verbus: …` on stderr, `warn` and
 * above (or `VERBUS_LOG_LEVEL`). Made once per process.
 */
export function libraryLogger(): LeveledLogger {
  library ??= createLogger({ name: "verbus", level: "warn" });
  return library;
}

/**
 * The logger of a `verbus` command (`name`, e.g. `verbus serve`): `info` and up (or
 * `VERBUS_LOG_LEVEL`), one JSON object a line under `--json` (`json`). Every command makes its
 * logger here, so the CLI's level and format are decided in one place.
 */
export function cliLogger(name: string, json: boolean): LeveledLogger {
  return createLogger({ name, level: "info", json });
}
