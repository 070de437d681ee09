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
import {
  compareAnswers,
  parseJsonPath,
  shadowRecords,
  shownSide,
  type Answer,
  type CompareRules,
  type ShadowRecords,
} from './shadow-compare.js';

interface ProxyMirrorConfig {
  host: string;
  path?: string;
  sample_ratio: number;
  timeout_ms: number;
  compare?: boolean;
  compare_sample: number;
  compare_headers?: string[];
  compare_json_paths?: string[];
  compare_max_body_bytes: number;
}

/** docs/plugins/proxy-mirror.md#comparing-answers: bodies past this are compared by status and headers only. */
export const DEFAULT_COMPARE_MAX_BODY_BYTES = 64 * 1024;

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
      compare: {
        type: 'boolean',
        default: false,
        description:
          "Compare the shadow's answer with the primary's (off the client's path); mismatches are counted and listed.",
      },
      compare_sample: {
        type: 'number',
        minimum: 0,
        maximum: 1,
        default: 1,
        description: 'Fraction of mirrored requests compared.',
      },
      compare_headers: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        description: 'Response header names compared (absent on both sides counts as equal).',
      },
      compare_json_paths: {
        type: 'array',
        minItems: 1,
        items: { type: 'string', minLength: 1 },
        description: 'JSON paths ($.a.b[0]) compared instead of the whole body.',
      },
      compare_max_body_bytes: {
        type: 'integer',
        minimum: 0,
        default: DEFAULT_COMPARE_MAX_BODY_BYTES,
        description: 'Bodies larger than this (either side) are compared by status and headers only.',
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
    const comparer = config.compare === true ? makeComparer(config, env, limits) : undefined;
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
        if (comparer !== undefined && comparer.sampled()) {
          comparer.start(ctx, lease, copy, copies.finish);
          return 'success';
        }
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

interface Comparer {
  sampled(): boolean;
  start(ctx: Context, lease: PoolLease, copy: ExchangeRequest, done: () => void): void;
}

function makeComparer(config: ProxyMirrorConfig, env: PluginEnv, limits: ExchangeLimits): Comparer {
  if (
    config.compare_headers !== undefined &&
    config.compare_headers.some((h) => !/^[!#$%&'*+.^`|~\w-]+$/.test(h))
  ) {
    const i = config.compare_headers.findIndex((h) => !/^[!#$%&'*+.^`|~\w-]+$/.test(h));
    throw new ConfigError(`compare_headers[${i}]`, `'${config.compare_headers[i]}' is not a header name`);
  }
  const rules: CompareRules = {
    headers: (config.compare_headers ?? []).map((h) => h.toLowerCase()),
    jsonPaths: config.compare_json_paths?.map((p, i) => parseJsonPath(p, `compare_json_paths[${i}]`)),
    maxBodyBytes: config.compare_max_body_bytes,
  };
  const records = shadowRecords(env.scope);
  records.register(env.policy, env.nodeId);
  const sample = config.compare_sample;
  return {
    sampled: () => sample >= 1 || Math.random() < sample,
    start(ctx, lease, copy, done) {
      const pair = new Pair(records, env, rules, ctx.request.method, ctx.request.path);
      (ctx.responseWatchers ??= []).push((c) => pair.watchPrimary(c, rules.maxBodyBytes));
      setImmediate(() => {
        exchange(lease.pool, copy, limits, null, null).then(
          (result) =>
            capture(result, rules.maxBodyBytes, (answer, error) => {
              done();
              pair.shadowDone(answer, error);
            }),
          (err: unknown) => {
            done();
            pair.shadowDone(null, err instanceof Error ? err.message : String(err));
          },
        );
      });
    },
  };
}

/** The two answers of one compared request; compares once both are in, on a later turn. */
class Pair {
  #primary: Answer | null | undefined = undefined;
  #shadow: Answer | null | undefined = undefined;
  #error: string | undefined;

  constructor(
    private readonly records: ShadowRecords,
    private readonly env: PluginEnv,
    private readonly rules: CompareRules,
    private readonly method: string,
    private readonly path: string,
  ) {}

  /** Runs just before the answer goes out: observes its body, never changes it. */
  watchPrimary(ctx: Context, max: number): void {
    const r = ctx.response;
    const status = r.status === 0 ? 200 : r.status;
    const headers = { ...r.headers };
    const stream = r.stream;
    if (stream === null) {
      const body = r.body ?? Buffer.alloc(0);
      this.primaryDone({
        status,
        headers,
        body: body.subarray(0, max + 1),
        bodyBytes: body.length,
        complete: true,
      });
      return;
    }
    const chunks: Buffer[] = [];
    let kept = 0;
    let seen = 0;
    let ended = false;
    stream.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (kept <= max) {
        chunks.push(chunk);
        kept += chunk.length;
      }
    });
    stream.once('end', () => (ended = true));
    stream.once('close', () => {
      const body = Buffer.concat(chunks).subarray(0, max + 1);
      this.primaryDone({ status, headers, body, bodyBytes: seen, complete: ended });
    });
  }

  primaryDone(answer: Answer): void {
    this.#primary = answer;
    if (this.#shadow !== undefined) setImmediate(() => this.#compare());
  }

  shadowDone(answer: Answer | null, error?: string): void {
    this.#shadow = answer;
    this.#error = error;
    if (this.#primary !== undefined) setImmediate(() => this.#compare());
  }

  #compare(): void {
    const primary = this.#primary;
    const shadow = this.#shadow;
    if (primary === undefined || primary === null || shadow === undefined) return;
    const base = { time: new Date().toISOString(), method: this.method, path: this.path };
    if (shadow === null) {
      this.records.record(this.env.policy, this.env.nodeId, {
        ...base,
        kinds: ['error'],
        error: this.#error ?? 'the shadow failed',
        body_compared: false,
        primary: shownSide(primary),
        shadow: null,
      });
      return;
    }
    const { kinds, bodyCompared } = compareAnswers(primary, shadow, this.rules);
    if (kinds.length === 0) return;
    this.records.record(this.env.policy, this.env.nodeId, {
      ...base,
      kinds,
      body_compared: bodyCompared,
      primary: shownSide(primary),
      shadow: shownSide(shadow),
    });
  }
}

/** Reads the shadow's answer, keeping at most `max` + 1 bytes; the rest is drained. */
function capture(
  result: ExchangeResult,
  max: number,
  done: (answer: Answer | null, error?: string) => void,
): void {
  const base = { status: result.status, headers: result.headers as Answer['headers'] };
  const stream = result.stream;
  if (stream === null) {
    const body = result.body ?? Buffer.alloc(0);
    done({ ...base, body: body.subarray(0, max + 1), bodyBytes: body.length, complete: true });
    return;
  }
  const chunks: Buffer[] = [];
  let kept = 0;
  let seen = 0;
  stream.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (kept <= max) {
      chunks.push(chunk);
      kept += chunk.length;
    }
  });
  finished(stream, (err) => {
    if (err) done(null, `the shadow's body failed: ${err.message}`);
    else done({ ...base, body: Buffer.concat(chunks).subarray(0, max + 1), bodyBytes: seen, complete: true });
  });
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
