/**
 * Reads the SNI host name from the first bytes of a TLS connection without terminating TLS:
 * the record layer (RFC 8446 §5.1), the ClientHello (RFC 8446 §4.1.2, RFC 5246 §7.4.1.2) and
 * its server_name extension (RFC 6066 §3).
 */

export type SniResult = { kind: 'found'; name: string } | { kind: 'absent' } | { kind: 'incomplete' };

const ABSENT = Object.freeze<SniResult>({ kind: 'absent' });
const INCOMPLETE = Object.freeze<SniResult>({ kind: 'incomplete' });

const CONTENT_TYPE_HANDSHAKE = 22;
const HANDSHAKE_CLIENT_HELLO = 1;
const RECORD_HEADER = 5;
const HANDSHAKE_HEADER = 4;
// The TLSCiphertext bound (RFC 5246 §6.2.3), looser than the 2^14 a plaintext hello needs.
const MAX_RECORD_PAYLOAD = 16384 + 2048;
const RANDOM_LENGTH = 32;
const MAX_SESSION_ID = 32;
const EXTENSION_SERVER_NAME = 0;
const NAME_TYPE_HOST_NAME = 0;
const MAX_HOST_NAME = 255;
const DOT = 0x2e;

/** 1 for each byte a host name may contain: ASCII letters, digits and `-._*`. */
const HOST_NAME_BYTES = (() => {
  const table = new Uint8Array(256);
  const allowed = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._*';
  for (let i = 0; i < allowed.length; i++) table[allowed.charCodeAt(i)] = 1;
  return table;
})();

/**
 * The SNI host name in `data`, the first bytes a client sent: `incomplete` while `data` is a valid
 * prefix of a ClientHello, `absent` once it cannot be one or carries no valid host_name.
 * Never throws; call again with the longer buffer after `incomplete`.
 *
 * @example
 * const sni = readServerName(firstBytes);
 * if (sni.kind === 'found') route(sni.name); // 'api.example.com'
 */
export function readServerName(data: Buffer): SniResult {
  // Walk handshake records until they carry the whole message (its length is known after 4 bytes)
  // or the data runs out. A hello may span records; what follows it may be any record type.
  let pos = 0;
  let records = 0;
  let firstRecordBytes = 0;
  let have = 0;
  let need = HANDSHAKE_HEADER;
  while (have < need) {
    const payloadLength = recordPayloadLength(data, pos);
    if (typeof payloadLength !== 'number') {
      if (payloadLength.kind === 'absent') return payloadLength;
      break; // the next header has not fully arrived; what has may already be malformed
    }
    const start = pos + RECORD_HEADER;
    const received = Math.min(payloadLength, data.length - start);
    records++;
    have += received;
    if (records === 1) {
      if (received > 0 && data.readUInt8(start) !== HANDSHAKE_CLIENT_HELLO) return ABSENT;
      firstRecordBytes = received;
    }
    if (need === HANDSHAKE_HEADER && have >= HANDSHAKE_HEADER) {
      need += messageLength(data, firstRecordBytes);
    }
    if (received < payloadLength) break;
    pos = start + payloadLength;
  }
  if (have < HANDSHAKE_HEADER) return INCOMPLETE;

  const usable = Math.min(have, need);
  // Only a hello split across records is copied; the usual single-record one is read in place.
  const message = records === 1 ? data : gatherHandshake(data, usable);
  const base = records === 1 ? RECORD_HEADER : 0;
  return parseClientHello(message, base + HANDSHAKE_HEADER, base + need, base + usable);
}

/** The payload length of the record header at `pos`, or the verdict when it is cut short or not a TLS handshake record. */
function recordPayloadLength(data: Buffer, pos: number): number | SniResult {
  const available = data.length - pos;
  if (available > 0 && data.readUInt8(pos) !== CONTENT_TYPE_HANDSHAKE) return ABSENT;
  if (available > 1 && data.readUInt8(pos + 1) !== 3) return ABSENT;
  if (available > 2 && data.readUInt8(pos + 2) > 4) return ABSENT;
  if (available < RECORD_HEADER) return INCOMPLETE;
  const length = data.readUInt16BE(pos + 3);
  // RFC 8446 §5.1: handshake records are never empty.
  return length === 0 || length > MAX_RECORD_PAYLOAD ? ABSENT : length;
}

/** The handshake message's body length; its 4-byte header may straddle records. */
function messageLength(data: Buffer, firstRecordBytes: number): number {
  if (firstRecordBytes >= HANDSHAKE_HEADER) return data.readUIntBE(RECORD_HEADER + 1, 3);
  return gatherHandshake(data, HANDSHAKE_HEADER).readUIntBE(1, 3);
}

/** The first `length` handshake bytes, copied out of consecutive records already validated by the caller. */
function gatherHandshake(data: Buffer, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let pos = 0;
  let filled = 0;
  while (filled < length && pos + RECORD_HEADER <= data.length) {
    const start = pos + RECORD_HEADER;
    const end = start + data.readUInt16BE(pos + 3);
    filled += data.copy(out, filled, start, Math.min(end, data.length, start + length - filled));
    pos = end;
  }
  return out;
}

/**
 * The verdict on a ClientHello body in `buf` from `start`: it declares it ends at `end`, and the
 * bytes received stop at `available` (≤ `end`). Returns `absent` as soon as the answer can no
 * longer become `found`, and `found` only for a complete, well-formed hello.
 */
function parseClientHello(buf: Buffer, start: number, end: number, available: number): SniResult {
  let pos = start;
  // legacy_version, random, legacy_session_id length
  let miss = shortfall(pos + 2 + RANDOM_LENGTH + 1, end, available);
  if (miss) return miss;
  if (buf.readUInt8(pos) !== 3) return ABSENT;
  pos += 2 + RANDOM_LENGTH;
  const sessionIdLength = buf.readUInt8(pos);
  if (sessionIdLength > MAX_SESSION_ID) return ABSENT;
  pos += 1 + sessionIdLength;

  miss = shortfall(pos + 2, end, available);
  if (miss) return miss;
  const cipherSuitesLength = buf.readUInt16BE(pos);
  if (cipherSuitesLength === 0 || cipherSuitesLength % 2 !== 0) return ABSENT;
  pos += 2 + cipherSuitesLength;

  miss = shortfall(pos + 1, end, available);
  if (miss) return miss;
  const compressionMethodsLength = buf.readUInt8(pos);
  if (compressionMethodsLength === 0) return ABSENT;
  pos += 1 + compressionMethodsLength;

  // Extensions are optional before TLS 1.3; anything after compression methods must be exactly them.
  if (pos === end) return ABSENT;
  miss = shortfall(pos + 2, end, available);
  if (miss) return miss;
  const extensionsEnd = pos + 2 + buf.readUInt16BE(pos);
  if (extensionsEnd !== end) return ABSENT;
  pos += 2;

  let found: SniResult = ABSENT;
  while (pos < extensionsEnd) {
    miss = shortfall(pos + 4, extensionsEnd, available);
    if (miss) return miss;
    const type = buf.readUInt16BE(pos);
    const dataEnd = pos + 4 + buf.readUInt16BE(pos + 2);
    miss = shortfall(dataEnd, extensionsEnd, available);
    if (miss) return miss;
    if (type === EXTENSION_SERVER_NAME) {
      // RFC 8446 §4.2: an extension type appears at most once.
      if (found !== ABSENT) return ABSENT;
      found = serverNameExtension(buf, pos + 4, dataEnd);
      if (found === ABSENT) return ABSENT;
    }
    pos = dataEnd;
  }
  // Every field up to `end` was received, so the hello is complete.
  return found;
}

/** Whether a field ending at `fieldEnd` overruns its vector (`limit`: malformed) or the bytes received. */
function shortfall(fieldEnd: number, limit: number, available: number): SniResult | undefined {
  if (fieldEnd > limit) return ABSENT;
  return fieldEnd > available ? INCOMPLETE : undefined;
}

/** The host_name in a server_name extension body spanning `start`..`end`, or absent when it is malformed or has none. */
function serverNameExtension(buf: Buffer, start: number, end: number): SniResult {
  // ServerNameList <1..2^16-1> fills the extension exactly.
  if (end - start < 2 || start + 2 + buf.readUInt16BE(start) !== end || end === start + 2) return ABSENT;
  let pos = start + 2;
  let found: SniResult = ABSENT;
  while (pos < end) {
    if (end - pos < 3) return ABSENT;
    const nameType = buf.readUInt8(pos);
    const nameEnd = pos + 3 + buf.readUInt16BE(pos + 1);
    if (nameEnd > end) return ABSENT;
    if (nameType === NAME_TYPE_HOST_NAME) {
      // RFC 6066 §3: at most one name per type.
      if (found !== ABSENT) return ABSENT;
      found = hostName(buf, pos + 3, nameEnd);
      if (found === ABSENT) return ABSENT;
    }
    pos = nameEnd;
  }
  return found;
}

/** The host name in `start`..`end`, lowercased without one trailing dot; absent when empty, too long or not a DNS-ish name. */
function hostName(buf: Buffer, start: number, end: number): SniResult {
  if (end > start && buf.readUInt8(end - 1) === DOT) end--;
  if (end === start || end - start > MAX_HOST_NAME) return ABSENT;
  for (let i = start; i < end; i++) {
    if (HOST_NAME_BYTES[buf.readUInt8(i)] !== 1) return ABSENT;
  }
  return { kind: 'found', name: buf.toString('latin1', start, end).toLowerCase() };
}
