/**
 * Text a peer chose, made safe for a log line: no control character reaches the log (each shows
 * as a `\xNN` or `\uNNNN` escape, so an ESC sequence or a newline cannot forge or erase a line),
 * and its length is bounded (a 1 MB Hello key is not a 1 MB log line). Also the stable key of a
 * cause (what a rate limit counts by), which does not change with the peer's bytes. Pure; any
 * thread.
 * @module
 */

/** Peer text longer than this many characters is cut (with an ellipsis and its length). */
export const PEER_TEXT_MAX = 200;
/** A whole log line is cut past this many characters (the last resort of {@link safeLogger}). */
export const LOG_LINE_MAX = 2000;

/**
 * Whether code unit `c` must not reach a log raw: C0 controls (newline and tab too), DEL, C1
 * controls, the Unicode line and paragraph separators, the bidirectional overrides and isolates
 * (they reorder what a reader sees), and lone surrogates (not text).
 */
function unsafe(c: number, s: string, i: number): boolean {
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  if (c === 0x2028 || c === 0x2029 || c === 0x200e || c === 0x200f || c === 0xfeff) return true;
  if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) return true;
  if (c >= 0xd800 && c <= 0xdbff) {
    const n = s.charCodeAt(i + 1);
    return !(n >= 0xdc00 && n <= 0xdfff);
  }
  if (c >= 0xdc00 && c <= 0xdfff) {
    const p = s.charCodeAt(i - 1);
    return !(p >= 0xd800 && p <= 0xdbff);
  }
  return false;
}

function escape(c: number): string {
  return c <= 0xff
    ? `\\x${c.toString(16).padStart(2, "0")}`
    : `\\u${c.toString(16).padStart(4, "0")}`;
}

/**
 * `text` with every unsafe character escaped and at most about `max` characters kept (escapes
 * count at their escaped length); a cut ends with `…(N chars)` giving the original length.
 */
export function peerText(text: string, max: number = PEER_TEXT_MAX): string {
  let out = "";
  let plainFrom = 0;
  let kept = 0; // characters of `out` plus the plain run not yet copied
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (kept >= max) {
      return out + text.slice(plainFrom, i) + `…(${text.length} chars)`;
    }
    if (!unsafe(c, text, i)) {
      kept++;
      continue;
    }
    const e = escape(c);
    out += text.slice(plainFrom, i) + e;
    plainFrom = i + 1;
    kept += e.length;
  }
  return plainFrom === 0 ? text : out + text.slice(plainFrom);
}

/** A whole log line made safe: {@link peerText} with the line bound {@link LOG_LINE_MAX}. */
export function safeLine(line: string): string {
  return peerText(line, LOG_LINE_MAX);
}

/**
 * The stable key of a cause described by `text`: what is quoted (a peer's key, token or name)
 * and every number (ports, sizes, positions) are collapsed, so the same kind of failure is one
 * cause whatever bytes the peer chose; bounded to 120 characters.
 */
export function causeKey(text: string): string {
  return text
    .slice(0, 400)
    .replace(/"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?/g, "<text>")
    .replace(/\b0x[0-9a-f]+\b/gi, "#")
    .replace(/\d+/g, "#")
    .slice(0, 120);
}

/** The logger shape of verbus (`rpc/protocol/dispatch.ts`'s `Logger`). */
export interface LineLogger {
  warn(message: string): void;
  info?(message: string): void;
}

/**
 * Wraps `logger` so every line it is given is passed through {@link safeLine} first: the last
 * line of defence, whatever a caller interpolated. Wrapping twice is harmless (idempotent text).
 */
export function safeLogger<L extends LineLogger>(logger: L): LineLogger {
  const info = logger.info;
  return {
    warn: (m) => logger.warn(safeLine(m)),
    ...(info ? { info: (m: string) => info.call(logger, safeLine(m)) } : {}),
  };
}
