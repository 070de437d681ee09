import type { Context, ErrorRecord, HeaderMap } from '../core/context.js';
import { REDACTED, type Redaction } from './redaction.js';

/** How a body appears in a snapshot: its length always, its text only when bodies are captured. */
export interface BodyCapture {
  len: number;
  text?: string;
  /** `text` was cut at `max_body_bytes`. */
  truncated?: true;
  /** Byte-identical to the previous snapshot's body, so the text is not repeated. */
  unchanged?: true;
  /** Not UTF-8: only the length is shown. */
  binary?: true;
  /** An upstream stream still flowing to the client; never read for a trace. */
  streamed?: true;
}

export interface RequestSnapshot {
  method: string;
  path: string;
  host: string;
  scheme: string;
  protocol: string;
  remote_addr: string;
  headers: Record<string, string[]>;
  query_params: Record<string, string[]>;
  body: BodyCapture;
}

export interface ResponseSnapshot {
  status_code: number;
  headers: Record<string, string[]>;
  body: BodyCapture;
}

/** A redacted point-in-time copy of the context (docs/debugging.md#reading-a-trace): `{request, response, message, errors}`. */
export interface ContextSnapshot {
  request: RequestSnapshot;
  response: ResponseSnapshot;
  message: Record<string, unknown>;
  errors: ErrorRecord[];
}

export interface CaptureOptions {
  captureBodies: boolean;
  maxBodyBytes: number;
  redaction: Redaction;
}

/** The bodies seen by the previous snapshot, to mark identical ones `unchanged`. */
export interface PreviousBodies {
  request: Buffer | null | undefined;
  response: Buffer | null | undefined;
}

const NO_PREVIOUS: PreviousBodies = { request: undefined, response: undefined };

/** Captures `ctx`, redacting secrets now: a secret must never enter the trace buffer. */
export function captureSnapshot(
  ctx: Context,
  options: CaptureOptions,
  previous: PreviousBodies = NO_PREVIOUS,
): ContextSnapshot {
  const { request, response } = ctx;
  const redaction = options.redaction;
  return {
    request: {
      method: request.method,
      path: request.path,
      host: request.host,
      scheme: request.scheme,
      protocol: request.protocol,
      remote_addr: request.remoteAddr,
      headers: headerLists(request.headers, redaction),
      query_params: queryLists(request.query, redaction),
      body: captureBody(request.body, previous.request, options),
    },
    response: {
      status_code: response.status,
      headers: headerLists(response.headers, redaction),
      body:
        response.stream !== null || response.relayed
          ? { len: 0, streamed: true }
          : captureBody(response.body, previous.response, options),
    },
    message: messageCopy(ctx.message, redaction),
    errors: ctx.errors.map((e) => ({
      node_id: e.node_id,
      code: e.code,
      message: e.message,
      metadata: cloneValue(e.metadata) as Record<string, unknown>,
    })),
  };
}

/** Header map → sorted `name → [values]`, secrets replaced value by value (arity is kept). */
export function headerLists(headers: HeaderMap, redaction: Redaction): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of Object.keys(headers).sort()) {
    const value = headers[name];
    if (value === undefined || name.charCodeAt(0) === 58 /* ':' h2 pseudo-header */) continue;
    const list = Array.isArray(value) ? value.map(String) : [String(value)];
    out[name] = redaction.header(name) ? list.map(() => REDACTED) : list;
  }
  return out;
}

function queryLists(query: ReadonlyMap<string, string[]>, redaction: Redaction): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of [...query.keys()].sort()) {
    const list = query.get(name) ?? [];
    out[name] = redaction.queryParam(name) ? list.map(() => REDACTED) : [...list];
  }
  return out;
}

function messageCopy(message: Record<string, unknown>, redaction: Redaction): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(message).sort()) {
    const value = message[key];
    if (value === undefined) continue;
    out[key] = redaction.messageKey(key) ? REDACTED : cloneValue(value);
  }
  return out;
}

/** A copy that later in-place mutation by a node cannot reach; non-cloneable values become text. */
function cloneValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  try {
    return structuredClone(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function captureBody(
  body: Buffer | null,
  previous: Buffer | null | undefined,
  options: CaptureOptions,
): BodyCapture {
  const len = body?.length ?? 0;
  if (!options.captureBodies) return { len };
  if (previous !== undefined && sameBytes(body, previous)) return { len, unchanged: true };
  if (body === null || len === 0) return { len, text: '' };
  const truncated = len > options.maxBodyBytes;
  const slice = truncated ? body.subarray(0, options.maxBodyBytes) : body;
  const text = decodeText(slice, truncated);
  if (text === undefined) return truncated ? { len, binary: true, truncated: true } : { len, binary: true };
  return truncated ? { len, text, truncated: true } : { len, text };
}

function sameBytes(a: Buffer | null, b: Buffer | null): boolean {
  if (a === b) return true;
  const la = a?.length ?? 0;
  const lb = b?.length ?? 0;
  if (la !== lb) return false;
  if (la === 0) return true;
  return (a as Buffer).equals(b as Buffer);
}

/** UTF-8 text, or undefined for binary. A cut in the middle of a character is not binary. */
function decodeText(bytes: Buffer, cut: boolean): string | undefined {
  const tries = cut ? 4 : 1;
  for (let drop = 0; drop < tries && drop < bytes.length; drop++) {
    try {
      return utf8.decode(drop === 0 ? bytes : bytes.subarray(0, bytes.length - drop));
    } catch {
      // Try again without a trailing partial character.
    }
  }
  return undefined;
}
