import type { AccessFormat } from '../config/access-log.js';
import type { Context } from '../core/context.js';
import type { ServerRequest } from '../server/data-plane.js';
import { REDACTED, type Redaction } from '../debug/redaction.js';
import { transferOf } from './request-facts.js';

/** One finished request as the access log sees it (docs/logging.md#access-log). */
export interface AccessFacts {
  route: string;
  status: number;
  startedAt: number;
  req: ServerRequest;
  ctx: Context | undefined;
}

export type { AccessFormat } from '../config/access-log.js';

/** Builds one access-log line (with its newline) from the facts of a finished request. */
export type LineFormatter = (facts: AccessFacts) => string;

/** Query parameter names seen so far and whether they are secret; bounded, names come from clients. */
const MAX_REMEMBERED_NAMES = 1024;

/**
 * The request target as logged: the path as sent, with the value of every
 * query parameter the trace redaction calls secret replaced by `<redacted>`.
 * The verdict per parameter name is remembered (the rule is a dozen
 * substring tests).
 */
export function redactTarget(target: string, redaction: Redaction, seen?: Map<string, boolean>): string {
  const q = target.indexOf('?');
  if (q === -1) return target;
  const pairs = target.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]!;
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const rawName = pair.slice(0, eq);
    let secret = seen?.get(rawName);
    if (secret === undefined) {
      secret = redaction.queryParam(decodeName(rawName));
      if (seen !== undefined && seen.size < MAX_REMEMBERED_NAMES) seen.set(rawName, secret);
    }
    if (secret) {
      pairs[i] = `${pair.slice(0, eq + 1)}${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${target.slice(0, q + 1)}${pairs.join('&')}` : target;
}

/** `Date#toISOString`, computed once per millisecond. */
function isoNow(): string {
  const now = Date.now();
  if (now !== lastIsoAt) {
    lastIsoAt = now;
    lastIso = new Date(now).toISOString();
  }
  return lastIso;
}
let lastIsoAt = 0;
let lastIso = '';

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
}

function header(req: ServerRequest, ctx: Context | undefined, name: string): string | undefined {
  const value = ctx?.request.headers[name] ?? ctx?.response.headers[name] ?? req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The upstream that answered, else the one a failed upstream node named in its error record. */
function upstreamOf(ctx: Context | undefined): { address: string; status: number; ms: number } | undefined {
  if (ctx === undefined) return undefined;
  const visit = ctx.upstream;
  if (visit !== undefined) return { address: visit.address, status: visit.status, ms: visit.seconds * 1000 };
  for (const record of ctx.errors) {
    const target = record.metadata.target;
    if (typeof target === 'string') return { address: target, status: 0, ms: -1 };
  }
  return undefined;
}

const round3 = (ms: number): number => Math.round(ms * 1000) / 1000;

function clientOf(req: ServerRequest, ctx: Context | undefined): string {
  return ctx?.request.remoteAddress ?? req.socket?.remoteAddress ?? '';
}

/** The fields of a JSON line, in a fixed order (docs/logging.md#access-log). */
export function jsonFields(
  facts: AccessFacts,
  redaction: Redaction,
  requestIdHeader: string,
  seen?: Map<string, boolean>,
): Record<string, unknown> {
  const { req, ctx, status } = facts;
  const upstream = upstreamOf(ctx);
  const referer = header(req, undefined, 'referer');
  const moved = transferOf(req, ctx, status);
  const fields: Record<string, unknown> = {
    time: isoNow(),
    request_id: header(req, ctx, requestIdHeader) ?? null,
    client: clientOf(req, ctx),
    method: req.method ?? 'GET',
    path: redactTarget(req.url ?? '', redaction, seen),
    protocol: `HTTP/${req.httpVersion}`,
    host: req.headers.host ?? req.headers[':authority'] ?? null,
    status,
    route: facts.route,
    policy: ctx?.policy ?? '',
    consumer: ctx?.consumer?.name ?? null,
    upstream: upstream?.address ?? null,
    upstream_status: upstream === undefined || upstream.status === 0 ? null : upstream.status,
    upstream_duration_ms: upstream === undefined || upstream.ms < 0 ? null : round3(upstream.ms),
    duration_ms: round3(performance.now() - facts.startedAt),
    bytes_in: moved.in,
    bytes_out: moved.out,
    error: ctx?.errors[0]?.code ?? null,
    user_agent: header(req, undefined, 'user-agent') ?? null,
    referer: referer === undefined ? null : redactTarget(referer, redaction),
  };
  // An LLM call (ai-proxy) adds its model, provider and tokens; other lines keep their fields.
  const message = ctx?.message;
  if (message !== undefined && message['ai.model'] !== undefined) {
    fields.ai_model = message['ai.model'];
    fields.ai_provider = message['ai.provider'] ?? null;
    fields.ai_prompt_tokens = message['ai.usage.prompt_tokens'] ?? null;
    fields.ai_completion_tokens = message['ai.usage.completion_tokens'] ?? null;
  }
  return fields;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** `10/Oct/2000:13:55:36 +0000` (Apache `%t` without brackets), in UTC. */
export function clfTime(date: Date): string {
  return (
    `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`
  );
}

/** Quoted-field escaping as nginx does it: `"`, `\` and bytes outside printable ASCII become `\xHH`. */
export function escapeQuoted(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/["\\\x00-\x1f\x7f-\u{10ffff}]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/**
 * Apache/NCSA combined: `client - consumer [time] "request" status bytes
 * "referer" "user-agent"`; the consumer is the authenticated user (`%u`).
 */
export function combinedLine(facts: AccessFacts, redaction: Redaction, seen?: Map<string, boolean>): string {
  const { req, ctx, status } = facts;
  const consumer = ctx?.consumer?.name;
  const bytes = transferOf(req, ctx, status).out;
  const target = redactTarget(req.url ?? '', redaction, seen);
  const referer = header(req, undefined, 'referer');
  const agent = header(req, undefined, 'user-agent');
  return (
    `${clientOf(req, ctx)} - ${consumer === undefined || consumer === '' ? '-' : escapeQuoted(consumer).replaceAll(' ', '\\x20')} ` +
    `[${clfTime(new Date())}] "${escapeQuoted(`${req.method ?? 'GET'} ${target} HTTP/${req.httpVersion}`)}" ` +
    `${status} ${bytes === 0 ? '-' : bytes} ` +
    `"${referer === undefined ? '-' : escapeQuoted(redactTarget(referer, redaction))}" ` +
    `"${agent === undefined ? '-' : escapeQuoted(agent)}"\n`
  );
}

/** The formatter for `access_log.format`. */
export function lineFormatter(
  format: AccessFormat,
  redaction: Redaction,
  requestIdHeader: string,
): LineFormatter {
  const seen = new Map<string, boolean>();
  if (format === 'combined') return (facts) => combinedLine(facts, redaction, seen);
  return (facts) => `${JSON.stringify(jsonFields(facts, redaction, requestIdHeader, seen))}\n`;
}
