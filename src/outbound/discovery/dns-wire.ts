import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { randomInt } from 'node:crypto';
import { ipVersion } from '../../runtime/ip-version.js';

/** One SRV record with the TTL it was answered with (node's `resolveSrv` drops the TTL). */
export interface SrvAnswer {
  readonly name: string;
  readonly port: number;
  readonly priority: number;
  readonly weight: number;
  readonly ttl: number;
}

/** A DNS server to ask: `ip`, `ip:port` or `[ipv6]:port` (port 53 by default). */
export interface DnsServer {
  readonly host: string;
  readonly port: number;
}

/** Why a query got no records: `nodata`/`nxdomain` are answers, the others are failures. */
export class DnsQueryError extends Error {
  constructor(
    readonly code: 'ENODATA' | 'ENOTFOUND' | 'ESERVFAIL' | 'EREFUSED' | 'ETIMEOUT' | 'EBADRESP' | 'ECONN',
    message: string,
  ) {
    super(message);
    this.name = 'DnsQueryError';
  }
}

const TYPE_SRV = 33;
const CLASS_IN = 1;

/** Parses `ip`, `ip:port`, `[ipv6]:port` (what `dns.setServers` accepts); undefined if it is none. */
export function parseDnsServer(text: string): DnsServer | undefined {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed !== null) {
    const port = bracketed[2] === undefined ? 53 : Number(bracketed[2]);
    return ipVersion(bracketed[1]!) === 6 && port >= 1 && port <= 65535
      ? { host: bracketed[1]!, port }
      : undefined;
  }
  if (ipVersion(text) !== 0) return { host: text, port: 53 };
  const colon = text.lastIndexOf(':');
  if (colon === -1) return undefined;
  const host = text.slice(0, colon);
  const port = Number(text.slice(colon + 1));
  if (ipVersion(host) !== 4 || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host, port };
}

/**
 * Asks the servers in order for the SRV records of `name` (UDP, then TCP when the answer is
 * truncated), each for at most `timeoutMs`; the first server that answers decides.
 */
export async function querySrv(
  name: string,
  servers: readonly DnsServer[],
  timeoutMs: number,
): Promise<SrvAnswer[]> {
  let last: DnsQueryError = new DnsQueryError('ECONN', 'no DNS server to ask');
  for (const server of servers) {
    try {
      const id = randomInt(0, 0x10000);
      const query = encodeQuery(id, name, TYPE_SRV);
      let reply = await udpExchange(server, query, id, timeoutMs);
      if ((reply.readUInt16BE(2) & 0x0200) !== 0) reply = await tcpExchange(server, query, id, timeoutMs);
      return parseSrvReply(reply, name);
    } catch (err) {
      if (!(err instanceof DnsQueryError)) throw err;
      // An answer (the name or the record type does not exist) is final; a failure tries the next server.
      if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') throw err;
      last = err;
    }
  }
  throw last;
}

function encodeQuery(id: number, name: string, type: number): Buffer {
  const labels = name.replace(/\.$/, '').split('.');
  const parts: Buffer[] = [];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0100, 2); // recursion desired
  header.writeUInt16BE(1, 4); // one question
  parts.push(header);
  for (const label of labels) {
    const bytes = Buffer.from(label, 'ascii');
    if (bytes.length === 0 || bytes.length > 63) throw new DnsQueryError('EBADRESP', `bad name ${name}`);
    parts.push(Buffer.from([bytes.length]), bytes);
  }
  const tail = Buffer.alloc(5);
  tail.writeUInt16BE(type, 1);
  tail.writeUInt16BE(CLASS_IN, 3);
  parts.push(tail);
  return Buffer.concat(parts);
}

function udpExchange(server: DnsServer, query: Buffer, id: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(ipVersion(server.host) === 6 ? 'udp6' : 'udp4');
    const done = (err: Error | null, reply?: Buffer) => {
      clearTimeout(timer);
      socket.close();
      if (err !== null) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => done(new DnsQueryError('ETIMEOUT', `${server.host}:${server.port} did not answer`)),
      timeoutMs,
    );
    socket.on('error', (err) =>
      done(new DnsQueryError('ECONN', `${server.host}:${server.port}: ${err.message}`)),
    );
    socket.on('message', (reply: Buffer) => {
      // Not ours (a late answer to an earlier query): keep waiting.
      if (reply.length >= 12 && reply.readUInt16BE(0) === id) done(null, reply);
    });
    socket.connect(server.port, server.host, () => socket.send(query));
  });
}

function tcpExchange(server: DnsServer, query: Buffer, id: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.host, port: server.port });
    const chunks: Buffer[] = [];
    let settled = false;
    const done = (err: Error | null, reply?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err !== null) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(
      () => done(new DnsQueryError('ETIMEOUT', `${server.host}:${server.port} (tcp) did not answer`)),
      timeoutMs,
    );
    socket.on('error', (err) =>
      done(new DnsQueryError('ECONN', `${server.host}:${server.port} (tcp): ${err.message}`)),
    );
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(query.length, 0);
      socket.end(Buffer.concat([length, query]));
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const all = Buffer.concat(chunks);
      if (all.length >= 2 && all.length >= 2 + all.readUInt16BE(0)) {
        const reply = all.subarray(2, 2 + all.readUInt16BE(0));
        if (reply.length >= 12 && reply.readUInt16BE(0) === id) done(null, reply);
        else done(new DnsQueryError('EBADRESP', 'answer to another query'));
      }
    });
    socket.on('end', () => done(new DnsQueryError('EBADRESP', 'connection closed before the answer')));
  });
}

const RCODE_ERRORS: Readonly<Record<number, DnsQueryError['code']>> = {
  2: 'ESERVFAIL',
  3: 'ENOTFOUND',
  5: 'EREFUSED',
};

/** The SRV records of the answer section (RFC 1035 §4.1, RFC 2782), names uncompressed. */
export function parseSrvReply(reply: Buffer, name: string): SrvAnswer[] {
  if (reply.length < 12) throw new DnsQueryError('EBADRESP', 'short answer');
  const rcode = reply.readUInt16BE(2) & 0x000f;
  if (rcode !== 0) {
    const code = RCODE_ERRORS[rcode] ?? 'EBADRESP';
    throw new DnsQueryError(code, `${name}: rcode ${rcode}`);
  }
  const questions = reply.readUInt16BE(4);
  const answers = reply.readUInt16BE(6);
  let at = 12;
  for (let i = 0; i < questions; i++) at = readName(reply, at).next + 4;
  const out: SrvAnswer[] = [];
  for (let i = 0; i < answers; i++) {
    at = readName(reply, at).next;
    if (at + 10 > reply.length) throw new DnsQueryError('EBADRESP', 'truncated record');
    const type = reply.readUInt16BE(at);
    const ttl = reply.readUInt32BE(at + 4);
    const length = reply.readUInt16BE(at + 8);
    const data = at + 10;
    if (data + length > reply.length) throw new DnsQueryError('EBADRESP', 'truncated record data');
    if (type === TYPE_SRV && length >= 7) {
      out.push({
        priority: reply.readUInt16BE(data),
        weight: reply.readUInt16BE(data + 2),
        port: reply.readUInt16BE(data + 4),
        name: readName(reply, data + 6).name,
        ttl,
      });
    }
    at = data + length;
  }
  if (out.length === 0) throw new DnsQueryError('ENODATA', `${name}: no SRV records`);
  return out;
}

/** A possibly compressed name at `offset`; `next` is the offset after it in the record. */
function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let at = offset;
  let next = -1;
  for (let jumps = 0; jumps < 256; jumps++) {
    if (at >= buf.length) throw new DnsQueryError('EBADRESP', 'name past the end');
    const length = buf[at]!;
    if (length === 0) {
      return { name: labels.join('.'), next: next === -1 ? at + 1 : next };
    }
    if ((length & 0xc0) === 0xc0) {
      if (at + 1 >= buf.length) throw new DnsQueryError('EBADRESP', 'pointer past the end');
      if (next === -1) next = at + 2;
      at = ((length & 0x3f) << 8) | buf[at + 1]!;
      continue;
    }
    labels.push(buf.toString('ascii', at + 1, at + 1 + length));
    at += 1 + length;
  }
  throw new DnsQueryError('EBADRESP', 'name compression loop');
}
