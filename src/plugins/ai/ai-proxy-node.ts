import { Readable, Transform, pipeline } from 'node:stream';
import { ClientGone, type AbortLike, type Context, type RequestPart } from '../../core/context.js';
import { NodeError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { NodeInstance } from '../../core/plugin.js';
import { classifyFailure } from '../../outbound/classify.js';
import { exchange, type ExchangeResult } from '../../outbound/exchange.js';
import type { OutboundDispatcher } from '../../outbound/pool-registry.js';
import type { Pair, SigV4Signer } from '../../signing/sigv4.js';
import type { AiMetrics } from './ai-metrics.js';
import {
  anthropicResponseToOpenAi,
  openAiResponseToAnthropic,
  usageFromAnthropic,
} from './formats/anthropic.js';
import { bedrockResponseToOpenAi } from './formats/bedrock.js';
import { clientFormatOf, parseAiRequest, type AiRequest } from './formats/client.js';
import { EventStreamReader } from './formats/event-stream.js';
import {
  embeddingsAnswer,
  embeddingsCalls,
  embeddingsUnsupported,
  isEmbeddingsPath,
  parseEmbeddingsRequest,
  type EmbeddingsRaw,
  type EmbeddingsRequest,
} from './embeddings.js';
import { geminiResponseToOpenAi } from './formats/gemini.js';
import { aiErrorBody, errorTypeFor, providerErrorOf } from './formats/errors.js';
import { SseReader } from './formats/sse.js';
import { StreamTranslator } from './formats/stream.js';
import type {
  AiUsage,
  AnthropicResponse,
  ClientFormat,
  OpenAiChatRequest,
  OpenAiChatResponse,
  SseEvent,
} from './formats/types.js';
import { providerBody, type ProviderName, type ProviderSpec, type Wire } from './providers.js';

/** One configured target, resolved at compile time. */
export interface AiTarget {
  name: string;
  provider: ProviderName;
  spec: ProviderSpec;
  origin: string;
  authority: string;
  /** The endpoint's path prefix without a trailing slash ('' for none). */
  prefix: string;
  pool: OutboundDispatcher;
  model: string | undefined;
  apiKey: string | undefined;
  priority: number;
  weight: number;
  timeoutMs: number;
  defaultMaxTokens: number;
  apiVersion: string;
  /** bedrock without an api_key: signs every call with SigV4 (service `bedrock`). */
  signer: SigV4Signer | undefined;
}

export interface AiProxySettings {
  targets: AiTarget[];
  clientFormat: 'auto' | ClientFormat;
  passClientKey: boolean;
  /** Relay streams as they come (nothing after the node reads the body). */
  streaming: boolean;
  metrics: AiMetrics;
  where: { policy: string; node: string };
  logger: Logger;
  release: () => void;
}

/** One target that failed, as the trace shows it (`message.ai.fallbacks`). */
interface Failure {
  target: string;
  status: number;
  reason: string;
}

const MAX_ERROR_BODY = 64 * 1024;
/** A streamed answer buffered because a later node reads the body. */
const MAX_BUFFERED_STREAM = 64 * 1024 * 1024;
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

/** The ai-proxy node: targets by priority, weighted within one, until one answers. */
export class AiProxyNode implements NodeInstance<'success'> {
  readonly #s: AiProxySettings;
  /** Targets grouped by priority, highest first. */
  readonly #groups: AiTarget[][];

  constructor(settings: AiProxySettings) {
    this.#s = settings;
    const byPriority = new Map<number, AiTarget[]>();
    for (const t of settings.targets) {
      if (t.weight === 0) continue;
      const group = byPriority.get(t.priority) ?? [];
      group.push(t);
      byPriority.set(t.priority, group);
    }
    this.#groups = [...byPriority.entries()].sort((a, b) => b[0] - a[0]).map(([, g]) => g);
  }

  async run(ctx: Context): Promise<'success'> {
    const started = performance.now();
    const configured = this.#s.clientFormat;
    const clientKey = this.#s.passClientKey ? clientKeyOf(ctx.request) : undefined;
    if (configured !== 'anthropic' && isEmbeddingsPath(ctx.request.path)) {
      const req = parseEmbeddingsRequest(ctx.request.body);
      if (typeof req === 'string') throw invalid(ctx, 'openai', 400, req);
      const order = this.#order().filter(
        (t) => embeddingsUnsupported(t.provider, t.model ?? req.model, req) === undefined,
      );
      if (order.length === 0) {
        const why = this.#s.targets.map(
          (t) => `${t.name}: ${embeddingsUnsupported(t.provider, t.model ?? req.model, req) ?? 'weight 0'}`,
        );
        throw invalid(
          ctx,
          'openai',
          400,
          `no target of this route can answer embeddings (${why.join('; ')})`,
        );
      }
      return this.#tryTargets(ctx, 'openai', order, (target) =>
        this.#embed(ctx, target, req, clientKey ?? target.apiKey, started),
      );
    }
    const format = configured === 'auto' ? clientFormatOf(ctx.request.path) : configured;
    if (format === undefined)
      throw invalid(ctx, 'openai', 404, `no OpenAI or Anthropic API at ${ctx.request.path}`);
    const req = parseAiRequest(format, ctx.request.body);
    if (typeof req === 'string') throw invalid(ctx, format, 400, req);
    return this.#tryTargets(ctx, format, this.#order(), (target) =>
      this.#call(ctx, target, req, clientKey ?? target.apiKey, started),
    );
  }

  /** Each target in `order` until one answers; every one failed: `error` with 502/503/504. */
  async #tryTargets(
    ctx: Context,
    format: ClientFormat,
    order: AiTarget[],
    attempt: (target: AiTarget) => Promise<Failure | null>,
  ): Promise<'success'> {
    const failures: Failure[] = [];
    for (let i = 0; i < order.length; i++) {
      const target = order[i]!;
      const failure = await attempt(target);
      if (failure === null) {
        if (failures.length > 0) ctx.message['ai.fallbacks'] = failures;
        return 'success';
      }
      failures.push(failure);
      const next = order[i + 1];
      this.#s.metrics.fallbacks.inc({ ...this.#labels(), from: target.name, to: next?.name ?? '' });
      this.#s.logger.warn(
        {
          ...this.#s.where,
          target: target.name,
          status: failure.status,
          reason: failure.reason,
          next: next?.name,
        },
        'ai-proxy: target failed',
      );
    }
    ctx.message['ai.fallbacks'] = failures;
    const last = failures.at(-1);
    const status =
      last === undefined
        ? 502
        : last.status === 504
          ? 504
          : last.status === 429 || last.status === 0
            ? 503
            : 502;
    const message = `every AI target failed: ${failures.map((f) => `${f.target} (${f.status === 0 ? f.reason : f.status})`).join(', ')}`;
    ctx.response.json(status, aiErrorBody(format, message, 'api_error', 'ai_provider_error'));
    throw new NodeError('AI_PROVIDER_ERROR', message, {
      status,
      metadata: { attempts: failures },
      responsePrepared: true,
    });
  }

  close(): void {
    this.#s.release();
  }

  #labels(): { policy: string; node: string } {
    return this.#s.where;
  }

  /** Every target once: priority groups highest first, a weighted draw within each. */
  #order(): AiTarget[] {
    const out: AiTarget[] = [];
    for (const group of this.#groups) {
      if (group.length === 1) {
        out.push(group[0]!);
        continue;
      }
      const left = [...group];
      while (left.length > 0) {
        let total = 0;
        for (const t of left) total += t.weight;
        let r = Math.random() * total;
        let pick = left.length - 1;
        for (let i = 0; i < left.length; i++) {
          r -= left[i]!.weight;
          if (r < 0) {
            pick = i;
            break;
          }
        }
        out.push(left.splice(pick, 1)[0]!);
      }
    }
    return out;
  }

  /** One call; null when ctx.response now holds an answer, else why the target failed. */
  async #call(
    ctx: Context,
    target: AiTarget,
    req: AiRequest,
    key: string | undefined,
    started: number,
  ): Promise<Failure | null> {
    const model = target.model ?? req.model;
    const labels = { ...this.#labels(), provider: target.provider, model };
    const body = providerBody(target.spec, req, {
      model,
      stream: req.stream,
      defaultMaxTokens: target.defaultMaxTokens,
    });
    const headers = [
      'host',
      target.authority,
      'content-type',
      'application/json',
      'accept',
      req.stream ? (target.spec.streamAccept ?? 'text/event-stream') : 'application/json',
      ...target.spec.fixedHeaders,
    ];
    const path = target.prefix + target.spec.path(model, req.stream, target.apiVersion);
    const payload = Buffer.from(JSON.stringify(body));
    if (key !== undefined) headers.push(...target.spec.auth(key));
    else if (target.signer !== undefined) headers.push(...signed(target.signer, path, headers, payload));
    const abort = new CallAbort(ctx.clientGone, target.timeoutMs);
    const sentAt = performance.now();
    let result: ExchangeResult;
    let raw: Buffer | null = null;
    try {
      result = await exchange(
        target.pool,
        { method: 'POST', path, headers, body: payload },
        { deadlineMs: 0, idleMs: req.stream ? target.timeoutMs : 0, streaming: req.stream },
        abort,
        null,
      );
      const ok = result.status >= 200 && result.status < 300;
      if (!ok || !req.stream || !this.#s.streaming)
        raw = result.body ?? (await readAll(result.stream, ok ? MAX_BUFFERED_STREAM : MAX_ERROR_BODY));
    } catch (err) {
      abort.dispose();
      const failure = classifyFailure(err);
      if (failure.code === 'UPSTREAM_CLIENT_ABORTED' && !abort.expired)
        throw new NodeError('UPSTREAM_CLIENT_ABORTED', 'ai-proxy: the client went away', { status: 499 });
      const timedOut = abort.expired || failure.code === 'UPSTREAM_TIMEOUT';
      const status = timedOut ? 504 : 502;
      this.#s.metrics.requests.inc({ ...labels, status: String(status) });
      return {
        target: target.name,
        status: timedOut ? 504 : 0,
        reason: timedOut ? `no answer within ${target.timeoutMs} ms` : failure.reason,
      };
    }
    abort.dispose();
    const status = result.status;
    this.#s.metrics.requests.inc({ ...labels, status: String(status) });
    ctx.upstream = {
      where: this.#s.where,
      address: target.origin,
      status,
      seconds: (performance.now() - sentAt) / 1000,
    };
    if (status === 429 || status >= 500)
      return { target: target.name, status, reason: providerErrorOf(raw).message || `status ${status}` };
    if (status < 200 || status >= 300) {
      if (status < 400) return { target: target.name, status, reason: `unexpected status ${status}` };
      // The target's own key was refused: its configuration, not the client's request, is at fault;
      // the provider's message (which may quote part of the key) stays out of the answer.
      if ((status === 401 || status === 403) && key !== undefined && key === target.apiKey)
        return { target: target.name, status, reason: "the provider refused the target's api_key" };
      // AWS's message may quote the canonical request, session token included: left out too.
      if ((status === 401 || status === 403) && key === undefined && target.signer !== undefined)
        return { target: target.name, status, reason: "the provider refused the target's aws credentials" };
      // The provider refused the request itself: another target would too. The client hears why.
      const error = providerErrorOf(raw);
      ctx.response.json(
        status,
        aiErrorBody(
          req.format,
          error.message || `the provider answered ${status}`,
          error.type ?? errorTypeFor(req.format, status),
          null,
        ),
      );
      this.#context(ctx, target, model, undefined);
      return null;
    }
    const answer = new Answer(this.#s.metrics, labels, started);
    this.#context(ctx, target, model, undefined);
    if (!req.stream) {
      const translated = translateAnswer(target.spec.wire, req.format, raw, model);
      if (translated === undefined)
        return { target: target.name, status: 502, reason: 'the answer is not JSON' };
      answer.firstToken();
      answer.finish(ctx, translated.usage);
      ctx.response.status = 200;
      ctx.response.headers = {};
      ctx.response.setBody(JSON.stringify(translated.body), 'application/json');
      return null;
    }
    const translator = new StreamTranslator({
      client: req.format,
      wire: target.spec.wire,
      clientWantsUsage:
        req.format === 'openai' && (req.body as OpenAiChatRequest).stream_options?.include_usage === true,
      model,
    });
    ctx.response.discardStream();
    ctx.response.status = 200;
    ctx.response.headers = { ...SSE_HEADERS };
    if (raw !== null) {
      // A later node reads the body: the whole stream, translated, becomes the body.
      ctx.response.setBody(translateWhole(raw, target.spec.wire, translator, answer));
      answer.finish(ctx, translator.usage);
      return null;
    }
    const source = result.stream ?? Readable.from(result.body === null ? [] : [result.body]);
    const relay = new EventRelay(readerFor(target.spec.wire), translator, answer, ctx);
    pipeline(source, relay, (err) => {
      if (err !== undefined && err !== null) answer.finish(ctx, translator.usage);
    });
    ctx.response.stream = relay;
    ctx.response.relayed = true;
    return null;
  }

  /** One embeddings request to `target` (Titan: one call per input); null when ctx.response holds the answer. */
  async #embed(
    ctx: Context,
    target: AiTarget,
    req: EmbeddingsRequest,
    key: string | undefined,
    started: number,
  ): Promise<Failure | null> {
    const model = target.model ?? req.model;
    const labels = { ...this.#labels(), provider: target.provider, model };
    const raws: EmbeddingsRaw[] = [];
    const sentAt = performance.now();
    for (const call of embeddingsCalls(target.provider, model, target.apiVersion, req)) {
      const headers = [
        'host',
        target.authority,
        'content-type',
        'application/json',
        'accept',
        'application/json',
      ];
      const path = target.prefix + call.path;
      if (key !== undefined) headers.push(...target.spec.auth(key));
      else if (target.signer !== undefined) headers.push(...signed(target.signer, path, headers, call.body));
      const abort = new CallAbort(ctx.clientGone, target.timeoutMs);
      let result: ExchangeResult;
      try {
        result = await exchange(
          target.pool,
          { method: 'POST', path, headers, body: call.body },
          { deadlineMs: 0, idleMs: 0, streaming: false },
          abort,
          null,
        );
      } catch (err) {
        const failure = classifyFailure(err);
        if (failure.code === 'UPSTREAM_CLIENT_ABORTED' && !abort.expired)
          throw new NodeError('UPSTREAM_CLIENT_ABORTED', 'ai-proxy: the client went away', { status: 499 });
        const timedOut = abort.expired || failure.code === 'UPSTREAM_TIMEOUT';
        this.#s.metrics.requests.inc({ ...labels, status: String(timedOut ? 504 : 502) });
        return {
          target: target.name,
          status: timedOut ? 504 : 0,
          reason: timedOut ? `no answer within ${target.timeoutMs} ms` : failure.reason,
        };
      } finally {
        abort.dispose();
      }
      const status = result.status;
      const raw = result.body ?? (await readAll(result.stream, MAX_BUFFERED_STREAM));
      this.#s.metrics.requests.inc({ ...labels, status: String(status) });
      ctx.upstream = {
        where: this.#s.where,
        address: target.origin,
        status,
        seconds: (performance.now() - sentAt) / 1000,
      };
      if (status === 429 || status >= 500)
        return { target: target.name, status, reason: providerErrorOf(raw).message || `status ${status}` };
      if (status < 200 || status >= 300) {
        if (status < 400) return { target: target.name, status, reason: `unexpected status ${status}` };
        if ((status === 401 || status === 403) && key !== undefined && key === target.apiKey)
          return { target: target.name, status, reason: "the provider refused the target's api_key" };
        if ((status === 401 || status === 403) && key === undefined && target.signer !== undefined)
          return { target: target.name, status, reason: "the provider refused the target's aws credentials" };
        const error = providerErrorOf(raw);
        ctx.response.json(
          status,
          aiErrorBody(
            'openai',
            error.message || `the provider answered ${status}`,
            error.type ?? errorTypeFor('openai', status),
            null,
          ),
        );
        this.#context(ctx, target, model, undefined);
        return null;
      }
      const count = result.headers['x-amzn-bedrock-input-token-count'];
      raws.push({
        body: raw,
        inputTokens: typeof count === 'string' && /^\d+$/.test(count) ? Number(count) : undefined,
      });
    }
    const answer = embeddingsAnswer(target.provider, model, req, raws);
    if (answer === undefined)
      return {
        target: target.name,
        status: 502,
        reason: 'the embeddings answer is not what the provider documents',
      };
    this.#context(ctx, target, model, undefined);
    const done = new Answer(this.#s.metrics, labels, started);
    done.finish(ctx, answer.usage);
    ctx.response.status = 200;
    ctx.response.headers = {};
    ctx.response.setBody(JSON.stringify(answer.body), 'application/json');
    return null;
  }

  /** `message.ai.*` of the target that answered (usage follows with the answer). */
  #context(ctx: Context, target: AiTarget, model: string, usage: AiUsage | undefined): void {
    ctx.message['ai.provider'] = target.provider;
    ctx.message['ai.model'] = model;
    ctx.message['ai.target'] = target.name;
    if (usage !== undefined) setUsage(ctx, usage);
  }
}

function setUsage(ctx: Context, usage: AiUsage): void {
  ctx.message['ai.usage.prompt_tokens'] = usage.prompt_tokens;
  ctx.message['ai.usage.completion_tokens'] = usage.completion_tokens;
  ctx.message['ai.usage.total_tokens'] = usage.total_tokens;
}

/** Time to first token, duration and tokens of the call that answered, recorded once. */
class Answer {
  readonly #metrics: AiMetrics;
  readonly #labels: { policy: string; node: string; provider: string; model: string };
  readonly #started: number;
  #sawToken = false;
  #finished = false;

  constructor(metrics: AiMetrics, labels: Answer['labels'], started: number) {
    this.#metrics = metrics;
    this.#labels = labels;
    this.#started = started;
  }

  get labels(): { policy: string; node: string; provider: string; model: string } {
    return this.#labels;
  }

  firstToken(): void {
    if (this.#sawToken) return;
    this.#sawToken = true;
    this.#metrics.firstToken.observe(this.#labels, (performance.now() - this.#started) / 1000);
  }

  finish(ctx: Context, usage: AiUsage | undefined): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#metrics.duration.observe(this.#labels, (performance.now() - this.#started) / 1000);
    if (usage === undefined) return;
    setUsage(ctx, usage);
    this.#metrics.tokens.inc({ ...this.#labels, type: 'prompt' }, usage.prompt_tokens);
    this.#metrics.tokens.inc({ ...this.#labels, type: 'completion' }, usage.completion_tokens);
  }
}

/** Provider bytes in, the client's events out: one write per provider read, never held back. */
class EventRelay extends Transform {
  readonly #reader: EventReader;
  readonly #translator: StreamTranslator;
  readonly #answer: Answer;
  readonly #ctx: Context;

  constructor(reader: EventReader, translator: StreamTranslator, answer: Answer, ctx: Context) {
    super();
    this.#reader = reader;
    this.#translator = translator;
    this.#answer = answer;
    this.#ctx = ctx;
  }

  override _transform(
    chunk: Buffer,
    _encoding: BufferEncoding,
    done: (err?: Error | null, data?: string) => void,
  ): void {
    const out = this.#translate(this.#reader.push(chunk));
    if (out === '') done();
    else done(null, out);
  }

  override _flush(done: (err?: Error | null, data?: string) => void): void {
    const out = this.#translate(this.#reader.end()) + this.#translator.end();
    this.#answer.finish(this.#ctx, this.#translator.usage);
    if (out === '') done();
    else done(null, out);
  }

  #translate(events: SseEvent[]): string {
    let out = '';
    for (const ev of events) {
      out += this.#translator.push(ev);
      if (this.#translator.sawToken) this.#answer.firstToken();
    }
    return out;
  }
}

/** The whole provider stream translated at once (a later node reads the body). */
function translateWhole(raw: Buffer, wire: Wire, translator: StreamTranslator, answer: Answer): string {
  const reader = readerFor(wire);
  let out = '';
  for (const ev of [...reader.push(raw), ...reader.end()]) {
    out += translator.push(ev);
    if (translator.sawToken) answer.firstToken();
  }
  return out + translator.end();
}

/** Reads a provider's stream into events: server-sent events, or Bedrock's event-stream frames. */
interface EventReader {
  push(chunk: Buffer): SseEvent[];
  end(): SseEvent[];
}

function readerFor(wire: Wire): EventReader {
  return wire === 'bedrock' ? new EventStreamReader() : new SseReader();
}

/** The SigV4 headers of one call: covers host, content-type, accept and the body. */
function signed(signer: SigV4Signer, path: string, flat: string[], payload: Buffer): string[] {
  const covered: Pair[] = [];
  for (let i = 0; i < flat.length; i += 2) covered.push([flat[i]!, flat[i + 1]!]);
  const q = path.indexOf('?');
  const query: Pair[] =
    q === -1 ? [] : [...new URLSearchParams(path.slice(q + 1)).entries()].map(([n, v]) => [n, v] as const);
  return signer.sign({
    method: 'POST',
    path: q === -1 ? path : path.slice(0, q),
    query,
    headers: covered,
    payload,
  }).headers;
}

/** A whole provider answer in the client's format, with its usage; undefined when it is not JSON. */
export function translateAnswer(
  wire: Wire,
  client: ClientFormat,
  raw: Buffer | null,
  model: string,
): { body: unknown; usage: AiUsage | undefined } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse((raw ?? Buffer.alloc(0)).toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  if (wire === 'anthropic') {
    const res = parsed as AnthropicResponse;
    const usage = res.usage === undefined ? undefined : usageFromAnthropic(res.usage);
    return { body: client === 'anthropic' ? res : anthropicResponseToOpenAi(res), usage };
  }
  const res =
    wire === 'gemini'
      ? geminiResponseToOpenAi(parsed, model)
      : wire === 'bedrock'
        ? bedrockResponseToOpenAi(parsed, model)
        : (parsed as OpenAiChatResponse);
  const u = res.usage;
  const usage =
    u === undefined || u === null
      ? undefined
      : {
          prompt_tokens: u.prompt_tokens ?? 0,
          completion_tokens: u.completion_tokens ?? 0,
          total_tokens: u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0),
        };
  return { body: client === 'openai' ? res : openAiResponseToAnthropic(res), usage };
}

/** The key a client authenticated with: `Authorization: Bearer`, `x-api-key`, `api-key` or `x-goog-api-key`. */
function clientKeyOf(req: RequestPart): string | undefined {
  const auth = req.header('authorization');
  if (auth !== undefined && /^bearer /i.test(auth)) {
    const key = auth.slice(7).trim();
    if (key !== '') return key;
  }
  for (const name of ['x-api-key', 'api-key', 'x-goog-api-key']) {
    const value = req.header(name)?.trim();
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

function invalid(ctx: Context, format: ClientFormat, status: number, message: string): NodeError {
  ctx.response.json(status, aiErrorBody(format, message, errorTypeFor(format, status), 'invalid_request'));
  return new NodeError('AI_REQUEST_INVALID', `ai-proxy: ${message}`, { status, responsePrepared: true });
}

async function readAll(stream: Readable | null, limit: number): Promise<Buffer> {
  if (stream === null) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit) {
      stream.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Aborts one call past its deadline or when the client goes away; `expired` tells which. */
class CallAbort extends ClientGone implements AbortLike {
  expired = false;
  readonly #client: AbortLike;
  readonly #timer: NodeJS.Timeout;

  constructor(client: AbortLike, timeoutMs: number) {
    super();
    this.#client = client;
    this.#timer = setTimeout(() => {
      this.expired = true;
      this.fire();
    }, timeoutMs);
    if (client.aborted) this.fire();
    else client.addEventListener('abort', this);
  }

  handleEvent(): void {
    this.fire();
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#client.removeEventListener('abort', this);
  }
}
