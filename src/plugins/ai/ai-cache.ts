import { createHash } from 'node:crypto';
import { pipeline, Transform, type Readable } from 'node:stream';
import type { Context } from '../../core/context.js';
import { compatNames } from '../../config/compat-names.js';
import type { CacheEvent } from '../../core/gateway-scope.js';
import { ConfigError, definePlugin, type CacheTarget, type Template } from '../../core/plugin.js';
import { throttledWarning } from '../throttled-warning.js';
import { resolveCacheBackend } from '../traffic/cache-backend.js';
import { namespacePrefix, type CachedResponse, type ResponseCache } from '../traffic/response-cache.js';
import {
  decodeAnswer,
  encodeAnswer,
  neutralOfWhole,
  normalise,
  StreamAssembler,
  streamedAnswer,
  wholeAnswer,
  type NeutralAnswer,
} from './ai-cache-entry.js';
import { embed, SemanticIndex, type EmbeddingsTarget } from './ai-cache-semantic.js';
import { clientFormatOf, parseAiRequest } from './formats/client.js';
import type { ClientFormat, OpenAiChatRequest } from './formats/types.js';

interface AiCacheConfig {
  phase: 'lookup' | 'store';
  id: string;
  ttl_s: number;
  policy: 'local' | 'redis' | 'kvstore';
  store?: string;
  client_format: 'auto' | ClientFormat;
  max_answer_bytes: number;
  vary: string[];
  semantic?: {
    target: { endpoint: string; model: string; api_key?: string; timeout_ms: number };
    threshold: number;
    max_entries: number;
  };
  cache_status_header?: string;
}

type CachePort = 'success' | 'hit';

/** What the lookup learned about a request, for the store half of the same pair. */
interface Note {
  key: string;
  format: ClientFormat;
  /** The semantic match's vector and group, for the store half to index the answer under. */
  vector?: Float64Array;
  group?: string;
}

const notes = new WeakMap<Context, Map<string, Note>>();

export const DEFAULT_TTL_S = 300;
export const DEFAULT_THRESHOLD = 0.95;
export const DEFAULT_SEMANTIC_ENTRIES = 1000;
const DEFAULT_EMBEDDINGS_TIMEOUT_MS = 5000;
const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
const hasControl = (text: string): boolean => [...text].some((c) => c < ' ' || c === '\u007f');

/**
 * A cache of LLM answers as lookup/store halves sharing a namespace `id` (like proxy-cache): the
 * lookup before ai-proxy answers a request seen before (port `hit`) in the asking client's format,
 * streamed when it asked to stream; the store after ai-proxy keeps the final answer (assembled from
 * the stream when it was streamed) in a neutral form. The key is the normalised request (model,
 * messages, tools, sampling parameters), not its client format nor `stream`. An optional semantic
 * match embeds the prompt and finds the nearest stored one above a cosine `threshold`.
 *
 * @example
 * ```yaml
 * - { id: cached, type: ai-cache, config: { phase: lookup, id: chat } }
 * - { id: keep, type: ai-cache, config: { phase: store, id: chat, ttl_s: 600 } }
 * ```
 */
export const aiCache = definePlugin({
  type: 'ai-cache',
  category: 'ai',
  description:
    'Cache of LLM answers as lookup/store nodes sharing an id: exact match on the normalised request, optional semantic match by embeddings; hits answer in the client format, streamed if asked.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['phase', 'id'],
    properties: {
      phase: {
        type: 'string',
        enum: ['lookup', 'store'],
        description: 'lookup (before ai-proxy) or store (after it).',
      },
      id: { type: 'string', minLength: 1, description: 'Cache namespace shared by the halves of a pair.' },
      ttl_s: {
        type: 'integer',
        minimum: 1,
        default: DEFAULT_TTL_S,
        description: 'Freshness of a stored answer in seconds (store half).',
      },
      policy: {
        type: 'string',
        enum: ['local', 'redis', 'kvstore'],
        default: 'local',
        description:
          "'local' (this process, the LRU of system.yaml cache.max_entries, default 10000, shared with proxy-cache) or 'redis' / 'kvstore' (a named store).",
      },
      store: {
        type: 'string',
        minLength: 1,
        description: "The stores: entry holding answers (policy 'redis').",
      },
      client_format: {
        type: 'string',
        enum: ['auto', 'openai', 'anthropic'],
        default: 'auto',
        description: 'auto: by path (…/chat/completions is OpenAI, …/messages is Anthropic), as ai-proxy.',
      },
      max_answer_bytes: {
        type: 'integer',
        minimum: 1,
        default: DEFAULT_MAX_ANSWER_BYTES,
        description: 'Larger answers (the bytes sent to the client) are served but not stored.',
      },
      vary: {
        type: 'array',
        items: { type: 'string' },
        default: [],
        description:
          'More key components, each a legacy $var or {{…}} template (e.g. $consumer_name): requests differing in one never share an answer, exact or semantic. Identical on both halves.',
      },
      semantic: {
        type: 'object',
        additionalProperties: false,
        required: ['target'],
        description: 'Lookup half: on an exact miss, the nearest stored prompt by embedding similarity.',
        properties: {
          target: {
            type: 'object',
            additionalProperties: false,
            required: ['endpoint', 'model'],
            properties: {
              endpoint: {
                type: 'string',
                minLength: 1,
                description: 'Base URL of an OpenAI-compatible API; /v1/embeddings is appended.',
              },
              model: { type: 'string', minLength: 1, description: 'The embeddings model.' },
              api_key: { type: 'string', minLength: 1, description: 'Sent as Authorization: Bearer.' },
              timeout_ms: {
                type: 'integer',
                minimum: 1,
                default: DEFAULT_EMBEDDINGS_TIMEOUT_MS,
                description: 'Deadline of one embeddings call; past it the lookup is a miss.',
              },
            },
          },
          threshold: {
            type: 'number',
            minimum: 0,
            maximum: 1,
            default: DEFAULT_THRESHOLD,
            description: 'Least cosine similarity of a semantic hit.',
          },
          max_entries: {
            type: 'integer',
            minimum: 1,
            default: DEFAULT_SEMANTIC_ENTRIES,
            description: 'Vectors kept in the in-process index of this id (oldest dropped first).',
          },
        },
      },
      cache_status_header: {
        type: 'string',
        minLength: 1,
        description:
          "Response header carrying HIT or MISS; default as proxy-cache's (switchyard-cache-status).",
      },
    },
  },
  outputs: {
    success: {
      kind: 'success',
      description: 'lookup: a miss, go on to ai-proxy; store: the answer goes on.',
    },
    hit: {
      kind: 'outcome',
      description: "The answer came from the cache, in the client's format; wire to client.",
    },
  },
  templated: ['vary[]'],
  readsResponseBody: () => false,
  create(config: AiCacheConfig, env) {
    if (hasControl(config.id)) throw new ConfigError('id', 'must not contain control characters');
    if (config.semantic !== undefined && config.phase === 'store')
      env.warn('semantic', 'ignored on the store half: configure it on the lookup half');
    if (config.semantic !== undefined) {
      try {
        const url = new URL(config.semantic.target.endpoint);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
      } catch {
        throw new ConfigError('semantic.target.endpoint', 'must be an absolute http or https URL');
      }
    }
    const cache = resolveCacheBackend(config, env);
    const index = env.scope.shared(
      `ai-cache.semantic\u0000${config.id}`,
      () => new SemanticIndex(config.semantic?.max_entries ?? DEFAULT_SEMANTIC_ENTRIES),
    );
    const count = (event: CacheEvent): void =>
      env.scope.metrics.cacheEvent(cache.backend, cache.store, event);
    const target: CacheTarget = {
      id: config.id,
      phase: config.phase,
      backend: cache.backend,
      store: cache.store,
      purge: async () => {
        index.clear();
        const removed = await cache.purge(config.id);
        count('purge');
        return removed;
      },
    };
    const vary = config.vary.map((text, i) => env.template(text, `vary[${i}]`, { legacy: true }));
    const s: Settings = {
      id: config.id,
      vary,
      prefix: `${namespacePrefix(config.id)}ai:`,
      clientFormat: config.client_format,
      ttl: config.ttl_s,
      maxBytes: config.max_answer_bytes,
      statusHeader: (config.cache_status_header ?? compatNames().cacheStatusHeader).toLowerCase(),
      semantic:
        config.semantic === undefined
          ? undefined
          : { target: config.semantic.target, threshold: config.semantic.threshold },
    };
    const warn = throttledWarning(env);
    const run =
      config.phase === 'lookup'
        ? lookupRun(s, cache, index, count, warn)
        : storeRun(s, cache, index, count, warn);
    return { cache: target, run };
  },
});

interface Settings {
  id: string;
  vary: Template[];
  prefix: string;
  clientFormat: 'auto' | ClientFormat;
  ttl: number;
  maxBytes: number;
  statusHeader: string;
  semantic: { target: EmbeddingsTarget; threshold: number } | undefined;
}

type Warn = (err: unknown, message: string) => void;

/** The request as the cache reads it, or undefined when it is none it can cache. */
function readRequest(
  ctx: Context,
  s: Settings,
):
  | { format: ClientFormat; stream: boolean; includeUsage: boolean; key: string; rest: string; text: string }
  | undefined {
  if (ctx.request.method !== 'POST') return undefined;
  const format = s.clientFormat === 'auto' ? clientFormatOf(ctx.request.path) : s.clientFormat;
  if (format === undefined) return undefined;
  const req = parseAiRequest(format, ctx.request.body);
  if (typeof req === 'string') return undefined;
  const normal = normalise(req);
  if (normal === undefined) return undefined;
  // The vary components go in front of both the exact input and the semantic group.
  const varied = s.vary.length === 0 ? '' : JSON.stringify(s.vary.map((t) => t.render(ctx)));
  const key =
    s.prefix + createHash('sha256').update(varied).update('\u0000').update(normal.exact).digest('base64url');
  return {
    format,
    stream: req.stream,
    includeUsage:
      format === 'openai' && (req.body as OpenAiChatRequest).stream_options?.include_usage === true,
    key,
    rest: varied + normal.rest,
    text: normal.text,
  };
}

async function getAnswer(cache: ResponseCache, key: string): Promise<NeutralAnswer | 'invalid' | undefined> {
  const got = await cache.get(key);
  if (got === undefined) return undefined;
  if (got === 'invalid') return 'invalid';
  return decodeAnswer(got.body.toString('utf8')) ?? 'invalid';
}

function lookupRun(
  s: Settings,
  cache: ResponseCache,
  index: SemanticIndex,
  count: (event: CacheEvent) => void,
  warn: Warn,
): (ctx: Context) => Promise<CachePort> {
  return async (ctx) => {
    const req = readRequest(ctx, s);
    if (req === undefined) return 'success';
    const note: Note = { key: req.key, format: req.format };
    let byId = notes.get(ctx);
    if (byId === undefined) notes.set(ctx, (byId = new Map<string, Note>()));
    byId.set(s.id, note);
    let found: NeutralAnswer | 'invalid' | undefined;
    try {
      found = await getAnswer(cache, req.key);
    } catch (err) {
      count('backend_error');
      warn(err, 'ai-cache: the cache backend failed; treating the lookup as a miss');
    }
    if (found === 'invalid') count('invalid_entry');
    let similarity: number | undefined;
    if ((found === undefined || found === 'invalid') && s.semantic !== undefined) {
      try {
        const vector = await embed(s.semantic.target, req.text);
        note.vector = vector;
        note.group = req.rest;
        const near = index.nearest(req.rest, vector, s.semantic.threshold);
        if (near !== undefined) {
          const got = await getAnswer(cache, near.key);
          if (got === undefined || got === 'invalid') index.delete(near.key);
          else {
            found = got;
            similarity = near.score;
          }
        }
      } catch (err) {
        warn(err, 'ai-cache: the semantic lookup failed (embeddings or backend); treating it as a miss');
      }
    }
    if (found === undefined || found === 'invalid') {
      count('miss');
      ctx.message['ai.cache'] = 'MISS';
      return 'success';
    }
    count('hit');
    serve(ctx, found, req.format, req.stream, req.includeUsage, s.statusHeader);
    ctx.message['ai.cache'] = 'HIT';
    if (similarity !== undefined) ctx.message['ai.cache.similarity'] = Math.round(similarity * 1e4) / 1e4;
    return 'hit';
  };
}

/** The cached answer on the response, in the client's format, over the headers earlier nodes set. */
function serve(
  ctx: Context,
  entry: NeutralAnswer,
  format: ClientFormat,
  stream: boolean,
  includeUsage: boolean,
  statusHeader: string,
): void {
  const res = ctx.response;
  res.discardStream();
  res.status = 200;
  if (stream) {
    res.setBody(streamedAnswer(entry, format, includeUsage));
    Object.assign(res.headers, SSE_HEADERS);
  } else res.setBody(wholeAnswer(entry, format), 'application/json');
  res.headers[statusHeader] = 'HIT';
  ctx.message['ai.model'] = entry.model;
}

function storeRun(
  s: Settings,
  cache: ResponseCache,
  index: SemanticIndex,
  count: (event: CacheEvent) => void,
  warn: Warn,
): (ctx: Context) => CachePort | Promise<CachePort> {
  const put = async (note: Note, answer: NeutralAnswer): Promise<void> => {
    const text = encodeAnswer(answer);
    const entry: CachedResponse = { status: 200, headers: {}, body: Buffer.from(text), storedAt: Date.now() };
    try {
      await cache.put(note.key, entry, s.ttl);
    } catch (err) {
      count('backend_error');
      warn(err, 'ai-cache: the cache backend failed; the answer was served but not stored');
      return;
    }
    if (note.vector !== undefined && note.group !== undefined)
      index.add(note.key, note.group, note.vector, s.ttl);
  };
  return (ctx) => {
    let note = notes.get(ctx)?.get(s.id);
    if (note === undefined) {
      const req = readRequest(ctx, s);
      if (req === undefined) return 'success';
      note = { key: req.key, format: req.format };
    }
    const res = ctx.response;
    res.headers[s.statusHeader] = 'MISS';
    if (res.status !== 200 && res.status !== 0) return 'success';
    const found = note;
    if (res.stream !== null) {
      const assembler = new StreamAssembler(found.format);
      res.stream = tee(
        res.stream,
        s.maxBytes,
        assembler,
        () => {
          const answer = assembler.end();
          if (answer === undefined) return;
          answer.usage ??= usageOf(ctx);
          void put(found, answer);
        },
        () => count('size_skip'),
      );
      return 'success';
    }
    const body = res.body;
    if (body === null || body.length === 0) return 'success';
    if (body.length > s.maxBytes) {
      count('size_skip');
      return 'success';
    }
    let answer: NeutralAnswer | undefined;
    if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
      const assembler = new StreamAssembler(found.format);
      assembler.push(body);
      answer = assembler.end();
    } else answer = neutralOfWhole(found.format, body);
    if (answer === undefined) return 'success';
    answer.usage ??= usageOf(ctx);
    return put(found, answer).then(() => 'success' as const);
  };
}

/** The usage ai-proxy put on the context (an OpenAI stream without include_usage carries none itself). */
function usageOf(ctx: Context): NeutralAnswer['usage'] {
  const prompt = ctx.message['ai.usage.prompt_tokens'];
  const completion = ctx.message['ai.usage.completion_tokens'];
  if (typeof prompt !== 'number' || typeof completion !== 'number') return undefined;
  const total = ctx.message['ai.usage.total_tokens'];
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: typeof total === 'number' ? total : prompt + completion,
  };
}

/**
 * Relays `source` unchanged while the assembler reads it; `complete` runs once it ended normally
 * (after ai-proxy's relay put the usage on the context). Past `maxBytes` nothing is kept.
 */
function tee(
  source: Readable,
  maxBytes: number,
  assembler: StreamAssembler,
  complete: () => void,
  tooLarge: () => void,
): Readable {
  let size = 0;
  let keeping = true;
  const relay = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (keeping) {
        size += chunk.length;
        if (size > maxBytes) {
          keeping = false;
          tooLarge();
        } else assembler.push(chunk);
      }
      done(null, chunk);
    },
    flush(done) {
      if (keeping) complete();
      done();
    },
  });
  return pipeline(source, relay, () => undefined);
}
