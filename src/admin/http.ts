import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConfigIssue } from '../config/schema-validate.js';
import type { SystemConfig } from '../config/system.js';
import { ADMIN_ERROR_STATUS, adminErrorBody, adminProblemBody, type AdminErrorCode } from '../core/errors.js';

/** What a handler answers: a JSON value, or text with its content type. */
export interface Reply {
  status: number;
  body?: unknown;
  /** Set for non-JSON bodies (`body` must then be a string or Buffer). */
  contentType?: string;
  headers?: Record<string, string>;
}

/**
 * An answer other than success, thrown from anywhere below a handler.
 * `body` is the JSON sent as is (docs/admin-api.md#conventions: `{error}`, `{error, details}`, `{error, referrers}`).
 */
export class AdminError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body.error === 'string' ? body.error : `admin error ${status}`);
    this.name = 'AdminError';
  }
}

/** An Admin error answer thrown below a handler; its status is the code's (src/core/errors.ts, docs/admin-api.md#error-codes). */
export const adminError = (
  code: AdminErrorCode,
  fields?: Record<string, unknown>,
  headers?: Record<string, string>,
): AdminError => new AdminError(ADMIN_ERROR_STATUS[code], adminErrorBody(code, fields), headers);

/** The same answer as a {@link Reply}, for the guards that answer before any handler runs. */
export const adminErrorReply = (
  code: AdminErrorCode,
  fields?: Record<string, unknown>,
  headers?: Record<string, string>,
): Reply => {
  const status = ADMIN_ERROR_STATUS[code];
  const body = adminErrorBody(code, fields);
  return headers === undefined ? { status, body } : { status, body, headers };
};

export const notFound = (): AdminError => adminError('not_found');

export const badRequest = (error: string, details?: ConfigIssue[]): AdminError =>
  new AdminError(400, adminProblemBody(error, details));

export const json = (status: number, body: unknown, headers?: Record<string, string>): Reply =>
  headers === undefined ? { status, body } : { status, body, headers };

/** Limits of one Admin write body (`admin.limits`; the defaults match the schema's). */
export interface BodyLimits {
  max_body_bytes: number;
  max_json_depth: number;
}

export const DEFAULT_BODY_LIMITS: BodyLimits = { max_body_bytes: 10 * 1024 * 1024, max_json_depth: 128 };

/** The configured limits, or the defaults for a gateway without an `admin:` block (MCP-only tests). */
export const bodyLimitsOf = (system: SystemConfig): BodyLimits => system.admin?.limits ?? DEFAULT_BODY_LIMITS;

const tooLarge = (limit: number): AdminError =>
  adminError(
    'payload_too_large',
    { message: `request body must not exceed ${limit} bytes (admin.limits.max_body_bytes)` },
    { connection: 'close' },
  );

/**
 * Reads the whole request body (bounded) and parses it as a JSON object.
 * The nesting depth is checked before parsing (L1): a 100k-deep document
 * parses, but every recursive walk after it (schema validation, cloning,
 * YAML rendering) would overflow the stack.
 */
export async function readJsonObject(
  req: IncomingMessage,
  limits: BodyLimits = DEFAULT_BODY_LIMITS,
): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.max_body_bytes) throw tooLarge(limits.max_body_bytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limits.max_body_bytes) throw tooLarge(limits.max_body_bytes);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw badRequest('request body must be a JSON object');
  if (jsonDepthExceeds(text, limits.max_json_depth)) {
    throw badRequest(`JSON nested deeper than ${limits.max_json_depth} levels (admin.limits.max_json_depth)`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw badRequest(`invalid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw badRequest('request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Whether `[`/`{` outside strings nest deeper than `max` anywhere in `text` (one linear pass). */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** A strong validator of one resource's stored JSON. */
export function etagOf(value: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(value)).digest('base64url').slice(0, 27)}"`;
}

/**
 * RFC 9110 If-Match with strong comparison: absent header passes; `*` needs
 * a current version; otherwise one listed tag must equal the current one.
 */
export function checkIfMatch(header: string | undefined, current: unknown): void {
  if (header === undefined) return;
  const ok =
    current !== undefined &&
    header
      .split(',')
      .map((tag) => tag.trim())
      .some((tag) => tag === '*' || tag === etagOf(current));
  if (!ok)
    throw adminError('precondition_failed', { message: 'If-Match does not match the current version' });
}

const COMMON_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

export function send(res: ServerResponse, reply: Reply): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  let payload: string | Buffer;
  let type: string;
  if (reply.contentType !== undefined) {
    payload = reply.body as string | Buffer;
    type = reply.contentType;
  } else {
    payload = reply.body === undefined ? '' : JSON.stringify(reply.body);
    type = 'application/json';
  }
  res.writeHead(reply.status, {
    ...COMMON_HEADERS,
    'content-type': type,
    'content-length': Buffer.byteLength(payload),
    ...reply.headers,
  });
  res.end(payload);
}
