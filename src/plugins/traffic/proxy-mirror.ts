import { finished } from 'node:stream';
import { Context } from '../../core/context.js';
import {
  exchange,
  type ExchangeLimits,
  type ExchangeRequest,
  type ExchangeResult,
} from '../../outbound/exchange.js';
import { acquirePool, type PoolLease } from '../../outbound/pool-registry.js';
import { buildRequestHeaders } from '../../outbound/proxy-headers.js';
import { loadTlsMaterial } from '../../tls/client.js';
import { ConfigError, definePlugin, type PluginEnv } from '../../core/plugin.js';

interface ProxyMirrorConfig {
  host: string;
  path?: string;
  sample_ratio: number;
  timeout_ms: number;
}

/**
 * Copies one node may have in flight. Past it, copies are dropped: a mirror
 * that stops answering would otherwise cost a new connection per request,
 * and that cost lands on the main requests.
 */
const MAX_IN_FLIGHT = 128;
let totalInFlight = 0;

/** Number of mirror copies still in flight, all nodes together (tests, diagnostics). */
export function mirrorsInFlight(): number {
  return totalInFlight;
}

/** In-flight bookkeeping of one node. */
class Copies {
  count = 0;
  #dropping = false;

  constructor(
    private readonly env: PluginEnv,
    private readonly origin: string,
  ) {}

  tryStart(): boolean {
    if (this.count >= MAX_IN_FLIGHT) {
      if (!this.#dropping) {
        this.#dropping = true;
        this.env.logger.warn(
          { policy: this.env.policy, node: this.env.nodeId, mirror: this.origin, in_flight: this.count },
          'proxy-mirror: too many copies in flight; dropping copies until the mirror answers',
        );
      }
      return false;
    }
    this.#dropping = false;
    this.count++;
    totalInFlight++;
    return true;
  }

  readonly finish = (): void => {
    this.count--;
    totalInFlight--;
  };
}

/** A context with nothing in it: static templates render without reading it. */
const emptyContext = (): Context =>
  new Context(
    {
      method: 'GET',
      url: '/',
      host: '',
      scheme: 'http',
      protocol: 'http1',
      headers: {},
      remoteAddress: '',
      remotePort: 0,
    },
    () => new AbortController().signal,
  );

/**
 * Sends a fire-and-forget copy of the request (method, headers, body, query)
 * to a shadow host. The copy leaves after the node has returned, has its own
 * deadline, and its outcome is ignored: the main request never waits for it.
 */
export const proxyMirror = definePlugin({
  type: 'proxy-mirror',
  category: 'traffic',
  description:
    'Send a fire-and-forget copy of the request to a shadow host; its answer is ignored and never delays the request.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['host'],
    properties: {
      host: {
        type: 'string',
        minLength: 1,
        description:
          'http(s)://host[:port], no path. Static or {{env.NAME}} / ${VAR} only: never request data.',
      },
      path: {
        type: 'string',
        pattern: '^/',
        description:
          'Path of the copy instead of the request path (the query is always appended). Static or env only.',
      },
      sample_ratio: {
        type: 'number',
        minimum: 0,
        maximum: 1,
        default: 1,
        description: 'Fraction of requests mirrored.',
      },
      timeout_ms: {
        type: 'integer',
        minimum: 1,
        default: 10000,
        description: 'Deadline of each copy (connect + headers, then idle body).',
      },
    },
  },
  outputs: { success: { kind: 'success' } },
  templated: ['host', 'path'],
  create(config: ProxyMirrorConfig, env) {
    const origin = resolveOrigin(staticField(config.host, 'host', env));
    const path = config.path === undefined ? undefined : staticField(config.path, 'path', env);
    const lease: PoolLease = acquirePool({
      origin,
      tls: origin.startsWith('https:') ? loadTlsMaterial({ verify: true }) : null,
      connectTimeoutMs: config.timeout_ms,
    });
    const limits: ExchangeLimits = {
      deadlineMs: config.timeout_ms,
      idleMs: config.timeout_ms,
      streaming: true,
    };
    const ratio = config.sample_ratio;
    const authority = new URL(origin).host;
    const copies = new Copies(env, origin);
    return {
      run(ctx) {
        if (ratio < 1 && !(Math.random() < ratio)) return 'success';
        if (!copies.tryStart()) return 'success';
        const req = ctx.request;
        const query = req.rawQuery;
        const target = path ?? req.path;
        const copy: ExchangeRequest = {
          method: req.method,
          path: query === '' ? target : `${target}?${query}`,
          headers: buildRequestHeaders(req, req.header('host') ?? authority),
          body: req.body,
        };
        // Dispatched on the next turn: nothing of the copy's I/O runs on this request's path.
        setImmediate(send, lease, copy, limits, copies.finish);
        return 'success';
      },
      close() {
        lease.release();
      },
    };
  },
});

function send(lease: PoolLease, copy: ExchangeRequest, limits: ExchangeLimits, done: () => void): void {
  exchange(lease.pool, copy, limits, null, null).then((result) => drain(result, done), done);
}

/** Reads and discards the answer so the connection goes back to the pool. */
function drain(result: ExchangeResult, done: () => void): void {
  const body = result.stream;
  if (body === null) return done();
  finished(body, () => done());
  body.resume();
}

/** docs/templates.md#ssrf-guidance: the mirror endpoint may come from the config or the environment, never from the request. */
function staticField(text: string, key: string, env: PluginEnv): string {
  const template = env.template(text, key);
  if (!template.isStatic) {
    throw new ConfigError(
      key,
      'must be static or use {{env.NAME}} / ${VAR}: request data cannot choose the mirror',
    );
  }
  return template.render(emptyContext());
}

function resolveOrigin(host: string): string {
  let url: URL;
  try {
    url = new URL(host);
  } catch {
    throw new ConfigError('host', `'${host}' is not a URL: use http(s)://host[:port]`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('host', `'${host}' must start with http:// or https://`);
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw new ConfigError('host', `'${host}' must not carry a path or query: use the path key`);
  }
  if (url.username !== '' || url.password !== '') throw new ConfigError('host', 'must not carry credentials');
  return url.origin;
}
