import { PassThrough, pipeline, type Readable } from 'node:stream';
import type { Context, HeaderMap } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import { ConfigError, definePlugin, type PluginEnv } from '../../core/plugin.js';
import { configReadsRequestBody } from '../request-body-refs.js';
import { throttledWarning } from '../throttled-warning.js';
import { compileLimitKey, keyTypeSchema, type KeyType } from '../traffic/limit-key.js';
import { contentText } from './ai-prompt-body.js';
import {
  LocalTokenCounter,
  openAiDuration,
  StoreTokenCounter,
  type Reserved,
  type TokenCounter,
  type TokenWindow,
} from './ai-rate-limit-counter.js';
import {
  answerUsage,
  contextUsage,
  tokensOf,
  UsageTap,
  type TokenType,
  type TokenUsage,
} from './ai-rate-limit-usage.js';

interface AiRateLimitConfig {
  phase: 'check' | 'count';
  limit?: number;
  time_window?: number;
  key?: string;
  key_type: KeyType;
  token_type: TokenType;
  policy: 'local' | 'redis' | 'kvstore';
  store?: string;
  group?: string;
  estimate: boolean;
  rejected_code: number;
  rejected_msg?: string;
  allow_degradation: boolean;
}

type Port = 'success' | 'limited';

/** One budget a request passed at a check half, counted by the count half after the call. */
interface Reservation {
  readonly counter: TokenCounter;
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly tokenType: TokenType;
  /** Tokens already counted before the call (`estimate: true`), replaced by the real usage. */
  readonly estimated: number;
  /** The window as the check half saw it (plus the estimate). */
  window: TokenWindow;
  readonly degrade: (err: unknown) => void;
}

const reservations = new WeakMap<Context, Reservation[]>();

/**
 * A token budget per key and window for LLM calls (APISIX `ai-rate-limiting`), as a pair: the
 * `check` half before the call refuses a key whose window is used up (429 in OpenAI's error
 * shape), the `count` half after it counts the call's real usage — from `message.ai.usage.*`
 * (ai-proxy) or, behind a plain upstream to an OpenAI-compatible server, from the answer's own
 * `usage` (whole, or in its server-sent events). A call that crosses the budget is admitted; the
 * next one is refused.
 *
 * @example
 * ```yaml
 * - { id: budget, type: ai-rate-limit, config: { limit: 100000, time_window: 3600, key: $consumer_name } }
 * - { id: llm, type: ai-proxy, config: { … } }
 * - { id: count, type: ai-rate-limit, config: { phase: count } }
 * ```
 */
export const aiRateLimit = definePlugin({
  type: 'ai-rate-limit',
  category: 'ai',
  description:
    'Token budget per key and window for LLM calls: the check half refuses a used-up key (429), the count half after the call counts the real usage; local or in a store.',
  readsRequestBody: (config: AiRateLimitConfig) => config.estimate || configReadsRequestBody(config),
  schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      phase: {
        type: 'string',
        enum: ['check', 'count'],
        default: 'check',
        description:
          "'check' before the LLM call (refuses a used-up budget), 'count' after it (counts the usage).",
      },
      limit: {
        type: 'integer',
        minimum: 1,
        description: 'Tokens allowed per window (check half; required).',
      },
      time_window: {
        type: 'integer',
        minimum: 1,
        description: 'Window length in seconds (check half; required).',
      },
      key: {
        type: 'string',
        description:
          'Budget key: legacy $var and {{…}} template, e.g. $consumer_name (default $remote_addr); an empty rendering counts by client IP.',
      },
      key_type: keyTypeSchema,
      token_type: {
        type: 'string',
        enum: ['total', 'prompt', 'completion'],
        default: 'total',
        description: 'Which tokens of the usage count against the budget.',
      },
      policy: {
        type: 'string',
        enum: ['local', 'redis', 'kvstore'],
        default: 'local',
        description:
          "'local' (this process) or 'redis' / 'kvstore' (one window in a named store, exact across processes and workers).",
      },
      store: {
        type: 'string',
        minLength: 1,
        description: "The stores: entry holding the windows (policy 'redis' / 'kvstore').",
      },
      group: {
        type: 'string',
        minLength: 1,
        description:
          'Check halves naming the same group share one window per key (give them the same limit and window).',
      },
      estimate: {
        type: 'boolean',
        default: false,
        description:
          'Count an estimate of the prompt (characters / 4) before the call, replaced by the real usage after it; a request whose estimate would cross the budget is refused.',
      },
      rejected_code: {
        type: 'integer',
        minimum: 200,
        maximum: 599,
        default: 429,
        description: 'Status of a refused request.',
      },
      rejected_msg: { type: 'string', minLength: 1, description: 'error.message of a refused request.' },
      allow_degradation: {
        type: 'boolean',
        default: false,
        description: 'When the store fails, let the request through (fail open) instead of failing it.',
      },
    },
  },
  outputs: {
    success: { kind: 'success' },
    limited: {
      kind: 'outcome',
      description:
        'The key used up its token budget; a 429 {"error":{"type":"rate_limit_exceeded"}} with retry-after is prepared. Wire to client (never taken by the count half).',
    },
  },
  templated: ['key'],
  readsResponseBody: () => false,
  create(config: AiRateLimitConfig, env) {
    return config.phase === 'count' ? countHalf(config, env) : checkHalf(config, env);
  },
});

const CHECK_ONLY = ['limit', 'time_window', 'key', 'store', 'group', 'rejected_msg'] as const;

function checkHalf(config: AiRateLimitConfig, env: PluginEnv) {
  if (config.limit === undefined) throw new ConfigError('limit', 'is required on the check half');
  if (config.time_window === undefined) throw new ConfigError('time_window', 'is required on the check half');
  const limit = config.limit;
  const windowMs = config.time_window * 1000;
  const counter = resolveCounter(config, env);
  const namespace =
    config.group === undefined
      ? `ai-rate-limit:${env.policy}/${env.nodeId}`
      : `ai-rate-limit:group:${config.group}`;
  const keyOf = compileLimitKey(env, config.key, config.key_type, 'key');
  const message =
    config.rejected_msg ??
    `token budget of ${limit} ${config.token_type} tokens per ${config.time_window}s used up`;
  const warn = throttledWarning(env);
  const estimateOf = config.estimate && config.token_type !== 'completion' ? estimatePrompt : undefined;

  const degradeOrFail = (err: unknown): Port => {
    if (config.allow_degradation) {
      warn(err, 'ai-rate-limit: the token store failed; letting requests through (allow_degradation)');
      return 'success';
    }
    throw new NodeError(
      'RATE_LIMIT_UNAVAILABLE',
      'failed to check the token budget: the token store failed',
      {
        metadata: { store: config.store ?? '' },
        cause: err,
      },
    );
  };
  const degrade = (err: unknown): void =>
    warn(err, 'ai-rate-limit: counting the usage failed; this call is not counted');

  const refuse = (ctx: Context, window: TokenWindow): 'limited' => {
    ctx.response.json(config.rejected_code, {
      error: { message, type: 'rate_limit_exceeded', param: null, code: 'rate_limit_exceeded' },
    });
    setBudgetHeaders(ctx.response.headers, limit, window);
    ctx.response.headers['retry-after'] = String(Math.max(1, Math.ceil(window.resetMs / 1000)));
    return 'limited';
  };
  const admit = (ctx: Context, key: string, window: TokenWindow, estimated: number): 'success' => {
    const list = reservations.get(ctx) ?? [];
    list.push({ counter, key, limit, windowMs, tokenType: config.token_type, estimated, window, degrade });
    reservations.set(ctx, list);
    setBudgetHeaders(ctx.response.headers, limit, window);
    return 'success';
  };
  const afterPeek = (ctx: Context, key: string, window: TokenWindow): Port =>
    window.used >= limit ? refuse(ctx, window) : admit(ctx, key, window, 0);
  const afterReserve = (ctx: Context, key: string, reserved: Reserved, estimated: number): Port =>
    reserved.admitted ? admit(ctx, key, reserved.window, estimated) : refuse(ctx, reserved.window);

  return {
    run(ctx: Context): Port | Promise<Port> {
      const key = `${namespace}:${keyOf(ctx)}`;
      const estimated = estimateOf?.(ctx) ?? 0;
      let window: TokenWindow | Promise<TokenWindow>;
      try {
        if (estimated > 0) {
          // Checked and counted in one step: with workers or a store, two calls cannot share the room.
          const reserved = counter.reserve(key, estimated, limit, windowMs);
          if (reserved instanceof Promise)
            return reserved.then((r) => afterReserve(ctx, key, r, estimated), degradeOrFail);
          return afterReserve(ctx, key, reserved, estimated);
        }
        window = counter.peek(key, windowMs);
      } catch (err) {
        return degradeOrFail(err);
      }
      if (window instanceof Promise) return window.then((w) => afterPeek(ctx, key, w), degradeOrFail);
      return afterPeek(ctx, key, window);
    },
  };
}

function countHalf(config: AiRateLimitConfig, env: PluginEnv) {
  for (const key of CHECK_ONLY) {
    if (config[key] !== undefined)
      env.warn(key, "ignored on the count half: the check half's budget is counted");
  }

  /** Counts one call into every budget the request passed; resolves once all are in. */
  const settle = (
    ctx: Context,
    list: Reservation[],
    usage: TokenUsage | undefined,
  ): Promise<void> | undefined => {
    let pending: Promise<void>[] | undefined;
    for (const r of list) {
      // No usage at all (an error answer, a server that reports none): the estimate, if any, stands.
      const tokens = usage === undefined ? r.estimated : tokensOf(usage, r.tokenType);
      const delta = tokens - r.estimated;
      if (delta === 0) continue;
      let added: TokenWindow | Promise<TokenWindow>;
      try {
        added = r.counter.add(r.key, delta, r.windowMs);
      } catch (err) {
        r.degrade(err);
        continue;
      }
      if (added instanceof Promise) {
        (pending ??= []).push(
          added.then(
            (w) => {
              r.window = w;
            },
            (err: unknown) => r.degrade(err),
          ),
        );
      } else r.window = added;
    }
    return pending === undefined ? undefined : Promise.all(pending).then(() => undefined);
  };

  const headers = (ctx: Context, list: Reservation[]): 'success' => {
    // The tightest budget speaks for the answer, as one set of OpenAI headers does.
    let tightest: Reservation | undefined;
    for (const r of list)
      if (tightest === undefined || r.limit - r.window.used < tightest.limit - tightest.window.used)
        tightest = r;
    if (tightest !== undefined) setBudgetHeaders(ctx.response.headers, tightest.limit, tightest.window);
    return 'success';
  };

  const whole = (ctx: Context, list: Reservation[]): 'success' | Promise<'success'> => {
    const body = ctx.response.body;
    const usage =
      contextUsage(ctx) ??
      (body === null ? undefined : answerUsage(body, ctx.response.header('content-type')));
    const pending = settle(ctx, list, usage);
    return pending === undefined ? headers(ctx, list) : pending.then(() => headers(ctx, list));
  };

  // A stream relayed as it comes: its usage is read at its end, after the headers went out with the
  // budget as it was before the call. The end of the relay waits for the count.
  const relayCounted = (ctx: Context, list: Reservation[], stream: Readable, sse: boolean): 'success' => {
    const tap = new UsageTap(ctx, sse, (usage) => settle(ctx, list, usage));
    pipeline(stream, tap, () => {});
    ctx.response.stream = tap;
    return headers(ctx, list);
  };

  return {
    run(ctx: Context): 'success' | Promise<'success'> {
      const list = reservations.get(ctx);
      if (list === undefined) return 'success';
      reservations.delete(ctx);
      const res = ctx.response;
      const stream = res.stream;
      if (stream === null) return whole(ctx, list);
      if (!(res.header('content-type') ?? '').includes('text/event-stream')) {
        // A whole answer relayed by a plain upstream: read it here, so the headers carry the budget after the call.
        return readWhole(stream).then((body) => {
          if (!Buffer.isBuffer(body)) return relayCounted(ctx, list, body, false);
          res.setBody(body);
          return whole(ctx, list);
        });
      }
      return relayCounted(ctx, list, stream, true);
    },
  };
}

function resolveCounter(config: AiRateLimitConfig, env: PluginEnv): TokenCounter {
  if (config.policy === 'local') {
    if (config.store !== undefined) env.warn('store', "ignored: policy is 'local'");
    return env.scope.shared('ai.token-windows', () => new LocalTokenCounter());
  }
  if (config.store === undefined)
    throw new ConfigError('store', `is required when policy is '${config.policy}'`);
  const store = env.stores.get(config.store);
  if (store === undefined) throw new ConfigError('store', `unknown store '${config.store}'`);
  return new StoreTokenCounter(store);
}

/** OpenAI's token budget headers; remaining is max(0, limit − used). */
function setBudgetHeaders(headers: HeaderMap, limit: number, window: TokenWindow): void {
  headers['x-ratelimit-limit-tokens'] = String(limit);
  headers['x-ratelimit-remaining-tokens'] = String(Math.max(0, limit - window.used));
  headers['x-ratelimit-reset-tokens'] = openAiDuration(window.resetMs);
}

/**
 * Characters / 4 of the prompt text (system, messages, a completions `prompt`, an embeddings
 * `input`), rounded up: OpenAI's rule of thumb for English. 0 for a body that is not JSON.
 */
function estimatePrompt(ctx: Context): number {
  const raw = ctx.request.body;
  if (raw === null || raw.length === 0) return 0;
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  } catch {
    return 0;
  }
  if (doc === null || typeof doc !== 'object') return 0;
  let chars = contentText(doc.system).length;
  if (Array.isArray(doc.messages)) {
    for (const m of doc.messages as unknown[])
      chars += contentText((m as { content?: unknown } | null)?.content).length;
  }
  for (const field of [doc.prompt, doc.input]) {
    if (typeof field === 'string') chars += field.length;
    else if (Array.isArray(field))
      for (const item of field as unknown[]) if (typeof item === 'string') chars += item.length;
  }
  return Math.ceil(chars / 4);
}

/** Most bytes of a relayed whole answer read to count its usage; a bigger one is relayed as it comes. */
const MAX_WHOLE_BYTES = 8 << 20;

/**
 * The whole of a relayed answer, or, when it is over {@link MAX_WHOLE_BYTES}, a stream of it
 * replayed from the start. A body that fails is the upstream's failure.
 */
function readWhole(stream: Readable): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes <= MAX_WHOLE_BYTES) return;
      stream.off('data', onData).off('end', onEnd).off('error', onError);
      stream.pause();
      const replay = new PassThrough();
      for (const c of chunks) replay.write(c);
      pipeline(stream, replay, () => {});
      resolve(replay);
    };
    const onEnd = (): void => resolve(Buffer.concat(chunks));
    const onError = (err: Error): void =>
      reject(
        new NodeError('UPSTREAM_BODY_READ_ERROR', `upstream body failed: ${err.message}`, { cause: err }),
      );
    stream.on('data', onData).once('end', onEnd).once('error', onError);
  });
}
