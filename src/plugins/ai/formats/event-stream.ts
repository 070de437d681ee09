import { crc32 } from 'node:zlib';
import type { SseEvent } from './types.js';

/**
 * An incremental reader of the AWS event-stream framing (`application/vnd.amazon.eventstream`,
 * Bedrock's ConverseStream): each message is a 12-byte prelude (total length, headers length,
 * CRC32 of those 8 bytes, all big-endian), the headers (name length byte, name, type byte, value),
 * the payload, and the CRC32 of everything before it. Bytes may be cut anywhere.
 *
 * Messages come out as {@link SseEvent}s so the stream translator reads them like server-sent
 * events: `:message-type: event` gives `{event: <:event-type>, data: <payload>}`; an `exception`
 * or `error` message, or a frame that fails its checks (after which nothing more is read), gives
 * `{event: 'exception', data: '{"type":…,"message":…}'}`.
 */
export class EventStreamReader {
  #buffer: Buffer = Buffer.alloc(0);
  #broken = false;

  push(chunk: Buffer | string): SseEvent[] {
    if (this.#broken) return [];
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.#buffer = this.#buffer.length === 0 ? bytes : Buffer.concat([this.#buffer, bytes]);
    const out: SseEvent[] = [];
    while (this.#buffer.length >= PRELUDE) {
      const buffer = this.#buffer;
      const total = buffer.readUInt32BE(0);
      const headersLength = buffer.readUInt32BE(4);
      if (crc32(buffer.subarray(0, 8)) !== buffer.readUInt32BE(8))
        return this.#fail(out, 'an event-stream prelude failed its CRC32 check');
      if (total < PRELUDE + 4 || total > MAX_MESSAGE || headersLength > total - PRELUDE - 4)
        return this.#fail(out, `an event-stream message has impossible lengths (${total}, ${headersLength})`);
      if (buffer.length < total) break;
      const message = buffer.subarray(0, total);
      if (crc32(message.subarray(0, total - 4)) !== message.readUInt32BE(total - 4))
        return this.#fail(out, 'an event-stream message failed its CRC32 check');
      const headers = parseHeaders(message.subarray(PRELUDE, PRELUDE + headersLength));
      if (headers === undefined) return this.#fail(out, 'an event-stream message has unreadable headers');
      const payload = message.subarray(PRELUDE + headersLength, total - 4).toString('utf8');
      this.#buffer = buffer.subarray(total);
      out.push(toEvent(headers, payload));
    }
    return out;
  }

  /** The stream ended; a message cut short is an error. */
  end(): SseEvent[] {
    if (this.#broken || this.#buffer.length === 0) return [];
    return this.#fail([], 'the event stream ended inside a message');
  }

  #fail(out: SseEvent[], message: string): SseEvent[] {
    this.#broken = true;
    this.#buffer = Buffer.alloc(0);
    out.push({ event: 'exception', data: JSON.stringify({ type: 'eventStreamFramingError', message }) });
    return out;
  }
}

const PRELUDE = 12;
/** The service limit of one event-stream message. */
const MAX_MESSAGE = 16 * 1024 * 1024;

type HeaderValue = string | number | bigint | boolean | Buffer;

/** Header types of the framing: 0 true, 1 false, 2 byte, 3 short, 4 int, 5 long, 6 bytes, 7 string, 8 timestamp, 9 uuid. */
function parseHeaders(raw: Buffer): Map<string, HeaderValue> | undefined {
  const headers = new Map<string, HeaderValue>();
  let at = 0;
  try {
    while (at < raw.length) {
      const nameLength = raw.readUInt8(at);
      const name = raw.subarray(at + 1, at + 1 + nameLength).toString('utf8');
      at += 1 + nameLength;
      const type = raw.readUInt8(at);
      at += 1;
      let value: HeaderValue;
      switch (type) {
        case 0:
          value = true;
          break;
        case 1:
          value = false;
          break;
        case 2:
          value = raw.readInt8(at);
          at += 1;
          break;
        case 3:
          value = raw.readInt16BE(at);
          at += 2;
          break;
        case 4:
          value = raw.readInt32BE(at);
          at += 4;
          break;
        case 5:
        case 8:
          value = raw.readBigInt64BE(at);
          at += 8;
          break;
        case 6:
        case 7: {
          const length = raw.readUInt16BE(at);
          const bytes = raw.subarray(at + 2, at + 2 + length);
          if (bytes.length !== length) return undefined;
          value = type === 7 ? bytes.toString('utf8') : bytes;
          at += 2 + length;
          break;
        }
        case 9:
          value = raw.subarray(at, at + 16);
          at += 16;
          break;
        default:
          return undefined;
      }
      if (at > raw.length) return undefined;
      headers.set(name, value);
    }
  } catch {
    return undefined; // a read past the end
  }
  return headers;
}

function toEvent(headers: Map<string, HeaderValue>, payload: string): SseEvent {
  const kind = headers.get(':message-type');
  if (kind === 'event') {
    const type = headers.get(':event-type');
    return { event: typeof type === 'string' ? type : '', data: payload };
  }
  // exception: the modelled error (`:exception-type`, JSON payload with a message); error: an
  // unmodelled one (`:error-code`, `:error-message`).
  const type = headers.get(':exception-type') ?? headers.get(':error-code');
  let message: unknown = headers.get(':error-message');
  if (typeof message !== 'string') {
    try {
      const parsed = JSON.parse(payload) as { message?: unknown; Message?: unknown };
      message = typeof parsed.message === 'string' ? parsed.message : parsed.Message;
    } catch {
      message = undefined;
    }
  }
  return {
    event: 'exception',
    data: JSON.stringify({
      type: typeof type === 'string' ? type : 'exception',
      message: typeof message === 'string' ? message : 'the provider failed while streaming',
    }),
  };
}
