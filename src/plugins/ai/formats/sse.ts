import { StringDecoder } from 'node:string_decoder';
import type { SseEvent } from './types.js';

/**
 * An incremental server-sent-events reader (the WHATWG framing: `field: value` lines, an event
 * ends at a blank line, `\n`, `\r\n` or `\r` line ends, `:` comments ignored). Bytes may be cut
 * anywhere, inside a UTF-8 sequence too; `push` returns the events completed so far.
 */
export class SseReader {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  #event: string | undefined = undefined;
  #data: string[] = [];
  /** A `\r` ended the last chunk: a `\n` opening the next one belongs to it. */
  #afterCr = false;

  push(chunk: Buffer | string): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    if (this.#afterCr && text.startsWith('\n')) text = text.slice(1);
    this.#afterCr = false;
    const out: SseEvent[] = [];
    let buffer = this.#pending + text;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.#line(buffer.slice(start, i), out);
      if (c === 13) {
        if (i + 1 === buffer.length) this.#afterCr = true;
        else if (buffer.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    buffer = buffer.slice(start);
    this.#pending = buffer;
    return out;
  }

  /** The stream ended: an event left without its blank line still counts (as browsers do not, but providers cut so). */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    const rest = this.#pending + this.#decoder.end();
    this.#pending = '';
    if (rest !== '') this.#line(rest, out);
    this.#line('', out);
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) out.push({ event: this.#event, data: this.#data.join('\n') });
      this.#event = undefined;
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.#data.push(value);
    else if (field === 'event') this.#event = value;
  }
}

/** One event as the gateway sends it: `event:` only when named, one `data:` line (JSON has no newline). */
export function sseFrame(data: string, event?: string): string {
  return event === undefined ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}
