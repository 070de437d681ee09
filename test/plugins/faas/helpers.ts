import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context } from '../../../src/core/context.js';
import { closeAllPools } from '../../../src/outbound/pool-registry.js';
import type { NodeInstance, PluginDefinition } from '../../../src/core/plugin.js';
import { templateFor } from '../../../src/template/index.js';
import { startOrigin, type Origin, type OriginHandler, type SeenRequest } from '../../support/origins.js';
import { instantiate, pluginEnv, type TestPluginEnv } from '../../support/plugin-env.js';

const created: NodeInstance<'success'>[] = [];
const origins: Origin[] = [];

/** A plugin env whose templates are the real compiler's, so request references render. */
export function templatingEnv(): TestPluginEnv {
  const env = pluginEnv();
  return {
    ...env,
    template: templateFor({ policy: env.policy, node: env.nodeId }, (m) => env.warn('template', m)),
  };
}

/** Creates a node the way the compiler would (schema defaults first); closed by `closeAll`. */
export function createNode<C>(
  definition: PluginDefinition<C, 'success'>,
  config: Record<string, unknown>,
  env: TestPluginEnv = templatingEnv(),
): { node: NodeInstance<'success'>; env: TestPluginEnv } {
  const node = instantiate(definition, config, env);
  created.push(node);
  return { node, env };
}

/** Starts a loopback origin that is closed by `closeAll`. */
export async function startFunction(handler: OriginHandler): Promise<Origin> {
  const origin = await startOrigin(handler);
  origins.push(origin);
  return origin;
}

export async function closeAll(): Promise<void> {
  for (const node of created.splice(0)) await node.close?.();
  await Promise.all(origins.splice(0).map((o) => o.close()));
  await closeAllPools();
}

/** What the function endpoint echoes back: enough to check forwarding without trusting the gateway. */
export interface Echo {
  method: string;
  url: string;
  headers: Record<string, string | string[]>;
  bodyLength: number;
  bodySha256: string;
}

/** Answers 200 with a JSON description of the request it received. */
export const echoRequest: OriginHandler = (req, res, body) => {
  const payload: Echo = {
    method: req.method ?? '',
    url: req.url ?? '',
    headers: req.headers as Record<string, string | string[]>,
    bodyLength: body.length,
    bodySha256: sha256Hex(body),
  };
  res.writeHead(200, { 'content-type': 'application/json', 'x-function': 'echo' });
  res.end(JSON.stringify(payload));
};

export function echoed(ctx: Context): Echo {
  assert.ok(ctx.response.body !== null, 'response has no body');
  return JSON.parse(ctx.response.body.toString('utf8')) as Echo;
}

/** Credentials and header names a signing endpoint expects. */
export interface SigningExpectation {
  accessKey: string;
  secretKey: string;
  region: string;
  service: string;
  dateHeader: string;
  tokenHeader: string;
  sessionToken?: string;
}

/**
 * A function endpoint that recomputes the version-4 signature from what it
 * received (written here from the published algorithm, independently of
 * src/signing) and answers 403 with the reason on a mismatch, else echoes.
 */
export function verifyingEndpoint(expected: SigningExpectation): OriginHandler {
  return (req, res, body) => {
    const problem = checkSignature(req, body, expected);
    if (problem !== null) {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: problem }));
      return;
    }
    echoRequest(req, res, body);
  };
}

/** Null when the request carries a valid signature over exactly host, date and (when expected) token. */
export function checkSignature(
  req: IncomingMessage,
  body: Buffer,
  expected: SigningExpectation,
): string | null {
  const auth = req.headers.authorization ?? '';
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (match === null) return `malformed authorization: ${auth}`;
  const [, accessKey, day, region, service, signedHeaders, signature] = match as unknown as string[];
  if (accessKey !== expected.accessKey) return `access key ${accessKey}`;
  if (region !== expected.region || service !== expected.service) return `scope ${region}/${service}`;
  const wanted = [
    'host',
    expected.dateHeader,
    ...(expected.sessionToken === undefined ? [] : [expected.tokenHeader]),
  ];
  if (signedHeaders !== [...wanted].sort().join(';')) return `signed headers ${signedHeaders}`;
  const date = header(req, expected.dateHeader);
  if (date === undefined || !/^\d{8}T\d{6}Z$/.test(date) || date.slice(0, 8) !== day) return `date ${date}`;
  if (Math.abs(Date.now() - parseAmzDate(date)) > 5 * 60_000) return `stale date ${date}`;
  if (expected.sessionToken !== undefined && header(req, expected.tokenHeader) !== expected.sessionToken) {
    return 'session token';
  }

  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const rawQuery = q === -1 ? '' : url.slice(q + 1);
  const query = rawQuery
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      const name = eq === -1 ? p : p.slice(0, eq);
      const value = eq === -1 ? '' : p.slice(eq + 1);
      return [rfc3986(decodeURIComponent(name)), rfc3986(decodeURIComponent(value))] as const;
    })
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
    .map(([n, v]) => `${n}=${v}`)
    .join('&');
  const canonicalHeaders = signedHeaders
    .split(';')
    .map((name) => `${name}:${(header(req, name) ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const canonicalRequest = [
    req.method,
    path.split('/').map(rfc3986).join('/'),
    query,
    canonicalHeaders,
    signedHeaders,
    sha256Hex(body),
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = `AWS4-HMAC-SHA256\n${date}\n${scope}\n${sha256Hex(Buffer.from(canonicalRequest))}`;
  let key: Buffer = hmac(`AWS4${expected.secretKey}`, day);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  const recomputed = createHmac('sha256', key).update(stringToSign).digest('hex');
  return recomputed === signature ? null : `signature mismatch; canonical request was:\n${canonicalRequest}`;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function parseAmzDate(date: string): number {
  return Date.UTC(
    +date.slice(0, 4),
    +date.slice(4, 6) - 1,
    +date.slice(6, 8),
    +date.slice(9, 11),
    +date.slice(11, 13),
    +date.slice(13, 15),
  );
}

function rfc3986(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export type { SeenRequest };
