/**
 * A tiny DNS server for tests, on UDP loopback through node:dgram (both runtimes): answers A,
 * AAAA and SRV questions from a table the test changes between questions, NXDOMAIN for names it
 * does not know, SERVFAIL while `fail` is set, nothing at all while `mute` is set. It counts the
 * questions it saw. Enough of RFC 1035 for node:dns's resolver; not a general server.
 * @module
 */
import dgram from "node:dgram";

/** An SRV record of the table. */
export interface SrvRecord {
  priority: number;
  weight: number;
  port: number;
  target: string;
}

/** What the responder answers; change its fields at any time. */
export interface DnsTable {
  a: Map<string, string[]>;
  aaaa: Map<string, string[]>;
  srv: Map<string, SrvRecord[]>;
}

/** A running responder. */
export interface DnsResponder {
  /** `127.0.0.1:PORT`, for `dnsServers`. */
  readonly server: string;
  readonly table: DnsTable;
  /** Answer SERVFAIL to everything. */
  fail: boolean;
  /** Answer nothing (the resolver times out). */
  mute: boolean;
  /** Questions seen, as `NAME TYPE`. */
  readonly questions: string[];
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;
const TYPE_SRV = 33;

function encodeName(name: string): number[] {
  const out: number[] = [];
  for (const label of name.replace(/\.$/, "").split(".")) {
    const b = new TextEncoder().encode(label);
    out.push(b.length, ...b);
  }
  out.push(0);
  return out;
}

function readName(b: Uint8Array, off: number): [string, number] {
  const labels: string[] = [];
  while (off < b.length && b[off] !== 0) {
    const n = b[off];
    labels.push(new TextDecoder().decode(b.subarray(off + 1, off + 1 + n)));
    off += 1 + n;
  }
  return [labels.join(".").toLowerCase(), off + 1];
}

function ipv6Bytes(ip: string): number[] {
  const [head, tail = ""] = ip.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = ip.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  return groups.flatMap((g) => {
    const v = parseInt(g, 16);
    return [v >> 8, v & 255];
  });
}

function u16(v: number): number[] {
  return [(v >> 8) & 255, v & 255];
}

/** Starts a responder on 127.0.0.1, a free port. */
export async function startDnsResponder(): Promise<DnsResponder> {
  const sock = dgram.createSocket("udp4");
  const table: DnsTable = { a: new Map(), aaaa: new Map(), srv: new Map() };
  const r: DnsResponder = {
    server: "",
    table,
    fail: false,
    mute: false,
    questions: [],
    close: () => new Promise<void>((res) => sock.close(() => res())),
  };
  sock.on("message", (msg: Uint8Array, peer: { port: number; address: string }) => {
    const b = new Uint8Array(msg);
    if (b.length < 17) return;
    const [name, end] = readName(b, 12);
    const qtype = (b[end] << 8) | b[end + 1];
    r.questions.push(`${name} ${qtype}`);
    if (r.mute) return;
    const answers: number[][] = [];
    // Every answer names the question by a pointer to offset 12.
    const rr = (type: number, data: number[]) =>
      answers.push([0xc0, 12, ...u16(type), 0, 1, 0, 0, 0, 5, ...u16(data.length), ...data]);
    if (qtype === TYPE_A) {
      for (const ip of table.a.get(name) ?? []) rr(TYPE_A, ip.split(".").map(Number));
    }
    if (qtype === TYPE_AAAA) {
      for (const ip of table.aaaa.get(name) ?? []) rr(TYPE_AAAA, ipv6Bytes(ip));
    }
    if (qtype === TYPE_SRV) {
      for (const s of table.srv.get(name) ?? []) {
        rr(TYPE_SRV, [
          ...u16(s.priority),
          ...u16(s.weight),
          ...u16(s.port),
          ...encodeName(s.target),
        ]);
      }
    }
    const known = table.a.has(name) || table.aaaa.has(name) || table.srv.has(name);
    const rcode = r.fail ? 2 : known ? 0 : 3; // SERVFAIL, NOERROR, NXDOMAIN
    const head = [b[0], b[1], 0x81, 0x80 | rcode, 0, 1, ...u16(answers.length), 0, 0, 0, 0];
    const out = new Uint8Array([...head, ...b.subarray(12, end + 4), ...answers.flat()]);
    sock.send(out, peer.port, peer.address);
  });
  await new Promise<void>((res) => sock.bind(0, "127.0.0.1", () => res()));
  (r as { server: string }).server = `127.0.0.1:${(sock.address() as { port: number }).port}`;
  return r;
}
