import type { Context, HeaderMap } from '../../core/context.js';
import type { ExchangeResult } from '../../outbound/exchange.js';
import type { PoolLease } from '../../outbound/pool-registry.js';
import { cleanResponseHeaders } from '../../outbound/proxy-headers.js';
import { percentEncode } from '../../signing/percent-encode.js';
import {
  ConfigError,
  definePlugin,
  type NodeInstance,
  type PluginEnv,
  type Template,
} from '../../core/plugin.js';
import { callOut, CalloutErrors } from './callout.js';
import { calloutProperties, FUNCTION_OUTPUTS, warnIgnoredKeepalive, type CalloutConfig } from './config.js';
import { calloutTls, leasePool, parseEndpointUri, type EndpointParts } from './endpoint.js';

export interface OpenWhiskConfig extends CalloutConfig {
  api_host: string;
  service_token: string;
  namespace: string;
  package?: string;
  action: string;
  result: boolean;
}

const TYPE = 'openwhisk';
const SEGMENTS = ['namespace', 'package', 'action'] as const;
type SegmentKey = (typeof SEGMENTS)[number];

/** Invokes an OpenWhisk action (blocking) with the request body and relays the action's reply. */
export const openwhisk = definePlugin({
  type: TYPE,
  category: 'faas',
  description:
    'Invoke an Apache OpenWhisk action (blocking) with the request body as its parameters; the reply becomes the response.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['api_host', 'service_token', 'action'],
    properties: {
      api_host: {
        type: 'string',
        minLength: 1,
        description:
          'API host, e.g. https://openwhisk.example:3233. Literal, ${VAR} or {{env.NAME}} only: never request data, never encoded.',
      },
      service_token: {
        type: 'string',
        minLength: 1,
        description: '`user:password`, sent as Authorization: Basic base64(service_token).',
      },
      namespace: {
        type: 'string',
        minLength: 1,
        default: '_',
        description: 'Namespace. Templated; percent-encoded (RFC 3986, per byte) into one path segment.',
      },
      package: {
        type: 'string',
        minLength: 1,
        description: 'Package of the action. Templated; percent-encoded into one path segment.',
      },
      action: {
        type: 'string',
        minLength: 1,
        description: 'Action name. Templated; percent-encoded into one path segment.',
      },
      result: {
        type: 'boolean',
        default: true,
        description: 'Ask for the action result only (true) or the whole activation record (false).',
      },
      ...calloutProperties(true),
    },
  },
  outputs: FUNCTION_OUTPUTS,
  templated: ['namespace', 'package', 'action'],
  create(config: OpenWhiskConfig, env: PluginEnv): OpenWhiskNode {
    warnIgnoredKeepalive(config, env);
    const host = resolveApiHost(config.api_host, env);
    const segments = SEGMENTS.flatMap((key) => {
      const text = config[key];
      return text === undefined ? [] : [compileSegment(key, text, env)];
    });
    const tls = calloutTls(config.ssl_verify);
    const lease = leasePool(host.origin, tls, config.timeout);
    return new OpenWhiskNode({
      host,
      lease,
      segments,
      query: `blocking=true&result=${config.result}&timeout=${config.timeout}`,
      authorization: `Basic ${Buffer.from(config.service_token, 'utf8').toString('base64')}`,
      timeoutMs: config.timeout,
      errors: new CalloutErrors(TYPE, 'OPENWHISK_CALLOUT_ERROR'),
    });
  },
});

/**
 * `api_host` decides where the callout goes, so it may come from the
 * configuration or the environment, never from the request (docs/templates.md#ssrf-guidance
 * guidance). It is used as written: no template output, no encoding.
 */
function resolveApiHost(text: string, env: PluginEnv): EndpointParts {
  const template = env.template(text, 'api_host');
  if (!template.isStatic) {
    throw new ConfigError(
      'api_host',
      'must not depend on request data (a client could steer the callout): use a literal, ${VAR} or {{env.NAME}}',
    );
  }
  // A static template never reads the context.
  const parsed = parseEndpointUri(template.render(null as never));
  if ('problem' in parsed) throw new ConfigError('api_host', parsed.problem);
  if (parsed.query !== '') throw new ConfigError('api_host', 'must not carry a query string');
  return { ...parsed, path: parsed.path.replace(/\/+$/, '') };
}

/** A path segment: static ones are checked and encoded once, templated ones per request. */
interface Segment {
  readonly key: SegmentKey;
  /** Encoded value when static. */
  readonly fixed: string | null;
  readonly template: Template;
}

function compileSegment(key: SegmentKey, text: string, env: PluginEnv): Segment {
  const template = env.template(text, key);
  if (!template.isStatic) return { key, fixed: null, template };
  // A static template never reads the context.
  const value = template.render(null as never);
  const problem = segmentProblem(key, value);
  if (problem !== null) throw new ConfigError(key, problem);
  return { key, fixed: percentEncode(value), template };
}

/**
 * Percent-encoding keeps `/`, `?`, `#` and `@` inside the segment; `.` and
 * `..` are unreserved, so they are refused rather than left to resolve as
 * dot segments somewhere along the way.
 */
function segmentProblem(key: SegmentKey, value: string): string | null {
  if (value === '') return key === 'package' ? null : `${key} is empty`;
  if (value === '.' || value === '..') return `${key} '${value}' is a dot segment`;
  return null;
}

interface OpenWhiskSettings {
  host: EndpointParts;
  lease: PoolLease;
  segments: Segment[];
  query: string;
  authorization: string;
  timeoutMs: number;
  errors: CalloutErrors;
}

export class OpenWhiskNode implements NodeInstance<'success'> {
  readonly #settings: OpenWhiskSettings;
  /** The whole request path when no segment is templated. */
  readonly #fixedPath: string | null;

  constructor(settings: OpenWhiskSettings) {
    this.#settings = settings;
    this.#fixedPath = settings.segments.every((s) => s.fixed !== null) ? this.#path(null) : null;
  }

  async run(ctx: Context): Promise<'success'> {
    const { host, lease, authorization, timeoutMs, errors } = this.#settings;
    const path = this.#fixedPath ?? this.#path(ctx);
    const request = {
      method: 'POST',
      path,
      headers: ['host', host.authority, 'authorization', authorization, 'content-type', 'application/json'],
      body: ctx.request.body,
    };
    const reply = await callOut(lease.pool, host.origin, request, timeoutMs, ctx, errors);
    applyActionReply(ctx, reply, host.origin, errors);
    return 'success';
  }

  close(): void {
    this.#settings.lease.release();
  }

  /** `<api_host path>/api/v1/namespaces/<ns>/actions/[<package>/]<action>?blocking=true&…` */
  #path(ctx: Context | null): string {
    const { host, segments, query, errors } = this.#settings;
    const encoded: Partial<Record<SegmentKey, string>> = {};
    for (const segment of segments) {
      if (segment.fixed !== null) encoded[segment.key] = segment.fixed;
      else {
        const value = segment.template.render(ctx!);
        const problem = segmentProblem(segment.key, value);
        if (problem !== null) throw errors.build(problem);
        if (value !== '') encoded[segment.key] = percentEncode(value);
      }
    }
    const pkg = encoded.package === undefined ? '' : `${encoded.package}/`;
    return `${host.path}/api/v1/namespaces/${encoded.namespace ?? '_'}/actions/${pkg}${encoded.action!}?${query}`;
  }
}

/**
 * An action may answer with an envelope `{statusCode, headers, body}`: its
 * status, headers and body become the response. Any other JSON reply (a
 * plain result, an activation record, a platform error) is relayed as it came;
 * a reply that is not JSON is a failed callout (503).
 */
export function applyActionReply(
  ctx: Context,
  reply: ExchangeResult,
  endpoint: string,
  errors: CalloutErrors,
): void {
  const raw = reply.body ?? Buffer.alloc(0);
  const response = ctx.response;
  response.discardStream();
  if (raw.length === 0) {
    relay(ctx, reply.status, cleanResponseHeaders(reply.headers), raw);
    return;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw errors.failed(endpoint, `the action reply (status ${reply.status}) is not JSON`);
  }
  if (!isEnvelope(parsed)) {
    relay(ctx, reply.status, cleanResponseHeaders(reply.headers), raw);
    return;
  }
  const status = envelopeStatus(parsed.statusCode, reply.status, endpoint, errors);
  const headers = envelopeHeaders(parsed.headers);
  const body = parsed.body;
  let bytes: Buffer;
  if (body === undefined || body === null) bytes = Buffer.alloc(0);
  else if (typeof body === 'string') bytes = Buffer.from(body, 'utf8');
  else {
    bytes = Buffer.from(JSON.stringify(body), 'utf8');
    headers['content-type'] ??= 'application/json';
  }
  relay(ctx, status, headers, bytes);
}

type Envelope = { statusCode?: unknown; headers?: unknown; body?: unknown };

function isEnvelope(value: unknown): value is Envelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return 'statusCode' in value || 'headers' in value || 'body' in value;
}

function envelopeStatus(value: unknown, fallback: number, endpoint: string, errors: CalloutErrors): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599) return value;
  throw errors.failed(endpoint, `the action reply has an invalid statusCode ${JSON.stringify(value)}`);
}

function envelopeHeaders(value: unknown): HeaderMap {
  const out: HeaderMap = {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return out;
  for (const [name, raw] of Object.entries(value as Record<string, unknown>)) {
    const key = name.toLowerCase();
    if (Array.isArray(raw)) out[key] = raw.map(headerText);
    else if (raw !== null && raw !== undefined) out[key] = headerText(raw);
  }
  return cleanResponseHeaders(out);
}

function headerText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function relay(ctx: Context, status: number, headers: HeaderMap, body: Buffer): void {
  const response = ctx.response;
  response.status = status;
  response.headers = headers;
  response.body = body;
}
