/**
 * Local LLM providers that speak the documented wire formats of the OpenAI Chat Completions API
 * and the Anthropic Messages API: their authentication headers, status codes and error bodies,
 * JSON answers with usage, and server-sent-event streams (OpenAI: `data:` chunks ending with
 * `data: [DONE]`, the usage chunk with `stream_options.include_usage`; Anthropic: named events
 * message_start, content_block_start/delta/stop, ping, message_delta with usage, message_stop).
 *
 * A `gemini` provider speaks the Gemini API (`/v1beta/models/{model}:generateContent`, and
 * `:streamGenerateContent?alt=sse` whose `data:` events are partial answers, `x-goog-api-key`,
 * `usageMetadata`, errors as `{error: {code, message, status}}`).
 *
 * The answer is deterministic: a request with tools and no tool result yet calls the first tool
 * with `{"city":"Paris"}`; a request whose last message is a tool result answers
 * `tool said: <result>`; any other answers `<greeting> <last user text>`. Usage counts words:
 * prompt tokens are the words of every message, completion tokens the words of the answer.
 * `next(...)` makes the following requests fail (429, 500, 529, hang) before they are answered.
 *
 * Embeddings: the OpenAI provider answers `…/embeddings` (floats, or float32 base64 with
 * `encoding_format: base64`, usage in words), the Gemini provider `:batchEmbedContents`
 * (`{embeddings: [{values}]}`, no usage), each vector {@link embeddingOf} its text.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type ProviderKind = 'openai' | 'anthropic' | 'gemini';

/** What the provider does with one request instead of answering it. */
export type Mishap = 429 | 500 | 503 | 529 | 'hang';

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface LlmProvider {
  readonly kind: ProviderKind;
  readonly url: string;
  readonly port: number;
  /** Every request received, in order. */
  readonly requests: SeenRequest[];
  /** The next requests meet these, one each, in order. */
  next(...mishaps: Mishap[]): void;
  /**
   * Holds every stream after its first content event until the returned function is called, so a
   * test can see that the first token reached the client while the provider still writes.
   */
  holdAfterFirstToken(): () => void;
  close(): Promise<void>;
}

export const OPENAI_TOOL_CALL_ID = 'call_Qx3LmN8pT2';
export const ANTHROPIC_TOOL_USE_ID = 'toolu_01A09q90qw90lq917835lq9';

export interface Reply {
  text: string;
  tool: { name: string } | undefined;
  prompt: number;
  completion: number;
}

const words = (text: string): number => text.split(/\s+/).filter((w) => w !== '').length;

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p: { type?: string; text?: string; content?: unknown }) =>
      p.type === 'text' ? (p.text ?? '') : p.type === 'tool_result' ? contentText(p.content) : '',
    )
    .join(' ');
}

/** The deterministic answer to a chat-shaped body (exported for the Bedrock provider). */
export function reply(kind: ProviderKind | 'bedrock', body: Record<string, unknown>): Reply {
  const messages = (body.messages ?? []) as { role: string; content?: unknown }[];
  const system = kind === 'anthropic' ? contentText(body.system) : '';
  const prompt = words(system) + messages.reduce((n, m) => n + words(contentText(m.content)), 0);
  const last = messages.at(-1);
  const tools = (body.tools ?? []) as { name?: string; function?: { name: string } }[];
  const lastIsToolResult =
    last !== undefined &&
    (last.role === 'tool' ||
      (Array.isArray(last.content) &&
        (last.content as { type?: string }[]).some((b) => b.type === 'tool_result')));
  if (tools.length > 0 && !lastIsToolResult) {
    const name = tools[0]!.function?.name ?? tools[0]!.name ?? 'tool';
    return { text: kind === 'anthropic' ? 'Let me check.' : '', tool: { name }, prompt, completion: 12 };
  }
  const greeting = {
    openai: 'Hello from OpenAI:',
    anthropic: 'Hello from Anthropic:',
    gemini: 'Hello from Gemini:',
    bedrock: 'Hello from Bedrock:',
  }[kind];
  const text = lastIsToolResult
    ? `tool said: ${contentText(last.content)}`
    : `${greeting} ${contentText(last?.content)}`;
  return { text, tool: undefined, prompt, completion: words(text) };
}

/** A Gemini body seen as messages and tools, for {@link reply}. */
function geminiAsChat(body: Record<string, unknown>): Record<string, unknown> {
  const contents = (body.contents ?? []) as { role: string; parts: Record<string, unknown>[] }[];
  const system = ((body.systemInstruction as { parts?: { text?: string }[] } | undefined)?.parts ?? [])
    .map((p) => p.text ?? '')
    .join(' ');
  const messages = contents.map((c) => {
    const response = c.parts.find((p) => p.functionResponse !== undefined)?.functionResponse as
      { response?: { content?: string } } | undefined;
    if (response !== undefined) return { role: 'tool', content: response.response?.content ?? '' };
    return {
      role: c.role === 'model' ? 'assistant' : 'user',
      content: c.parts.map((p) => (typeof p.text === 'string' ? p.text : '')).join(''),
    };
  });
  const declarations = (body.tools as { functionDeclarations?: { name: string }[] }[] | undefined)?.[0]
    ?.functionDeclarations;
  return {
    messages: system === '' ? messages : [{ role: 'system', content: system }, ...messages],
    ...(declarations === undefined ? {} : { tools: declarations.map((d) => ({ name: d.name })) }),
  };
}

/**
 * The deterministic embedding of `text` every local provider answers (8 numbers in [-0.5, 0.5),
 * or `dimensions` of them): equal texts get equal vectors, different ones different vectors.
 */
export function embeddingOf(text: string, dimensions = 8): number[] {
  let hash = 2166136261;
  for (const c of Buffer.from(text)) hash = Math.imul(hash ^ c, 16777619) >>> 0;
  return Array.from({ length: dimensions }, (_, i) => (((hash >>> (i % 24)) + i * 7919) % 1000) / 1000 - 0.5);
}

/** `input` of an OpenAI embeddings body as texts (token arrays as their numbers joined). */
function embeddingInputs(input: unknown): string[] | undefined {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  if (input.every((x) => typeof x === 'number')) return [input.join(' ')];
  return input.map((x) => (Array.isArray(x) ? x.join(' ') : String(x)));
}

function float32Base64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString('base64');
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

// --- OpenAI -----------------------------------------------------------------------------------

function openAiError(res: ServerResponse, status: number): void {
  if (status === 429)
    json(
      res,
      429,
      {
        error: {
          message: 'Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1.',
          type: 'requests',
          param: null,
          code: 'rate_limit_exceeded',
        },
      },
      { 'retry-after': '1', 'x-ratelimit-remaining-requests': '0' },
    );
  else
    json(res, status, {
      error: {
        message: 'The server had an error while processing your request. Sorry about that!',
        type: 'server_error',
        param: null,
        code: null,
      },
    });
}

async function openAiAnswer(res: ServerResponse, body: Record<string, unknown>, gate: Gate): Promise<void> {
  const r = reply('openai', body);
  const model = String(body.model);
  const id = 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT';
  const created = 1741569952;
  const usage = {
    prompt_tokens: r.prompt,
    completion_tokens: r.completion,
    total_tokens: r.prompt + r.completion,
  };
  const call = r.tool && {
    id: OPENAI_TOOL_CALL_ID,
    type: 'function',
    function: { name: r.tool.name, arguments: '{"city":"Paris"}' },
  };
  if (body.stream !== true) {
    json(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: call ? null : r.text,
            refusal: null,
            ...(call ? { tool_calls: [call] } : {}),
            annotations: [],
          },
          logprobs: null,
          finish_reason: call ? 'tool_calls' : 'stop',
        },
      ],
      usage: {
        ...usage,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
      },
      service_tier: 'default',
      system_fingerprint: 'fp_fc9f1d7035',
    });
    return;
  }
  const withUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: 'fp_fc9f1d7035',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(withUsage ? { usage: null } : {}),
    })}\n\n`;
  res.write(chunk({ role: 'assistant', content: '', refusal: null }, null));
  if (call) {
    res.write(
      chunk(
        {
          tool_calls: [
            {
              index: 0,
              id: call.id,
              type: 'function',
              function: { name: call.function.name, arguments: '' },
            },
          ],
        },
        null,
      ),
    );
    await gate.wait();
    for (const piece of ['{"ci', 'ty":"Pa', 'ris"}'])
      res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null));
  } else {
    const pieces = r.text.split(/(?<= )/);
    for (const [i, piece] of pieces.entries()) {
      res.write(chunk({ content: piece }, null));
      if (i === 0) await gate.wait();
    }
  }
  res.write(chunk({}, call ? 'tool_calls' : 'stop'));
  if (withUsage)
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fc9f1d7035', choices: [], usage })}\n\n`,
    );
  res.end('data: [DONE]\n\n');
}

// --- Anthropic --------------------------------------------------------------------------------

function anthropicError(res: ServerResponse, status: number, type?: string, message?: string): void {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    429: 'rate_limit_error',
    500: 'api_error',
    503: 'api_error',
    529: 'overloaded_error',
  };
  json(
    res,
    status,
    {
      type: 'error',
      error: {
        type: type ?? types[status] ?? 'api_error',
        message: message ?? (status === 529 ? 'Overloaded' : 'Internal server error'),
      },
    },
    { 'request-id': 'req_011CSHoEeqs5C35K2UUqR7Fy', ...(status === 429 ? { 'retry-after': '1' } : {}) },
  );
}

function sse(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

async function anthropicAnswer(
  res: ServerResponse,
  body: Record<string, unknown>,
  gate: Gate,
): Promise<void> {
  const r = reply('anthropic', body);
  const model = String(body.model);
  const id = 'msg_013Zva2CMHLNnXjNJJKqJ2EF';
  const content: Record<string, unknown>[] = [];
  if (r.text !== '') content.push({ type: 'text', text: r.text });
  if (r.tool)
    content.push({
      type: 'tool_use',
      id: ANTHROPIC_TOOL_USE_ID,
      name: r.tool.name,
      input: { city: 'Paris' },
    });
  const stop = r.tool ? 'tool_use' : 'end_turn';
  if (body.stream !== true) {
    json(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: stop,
      stop_sequence: null,
      usage: {
        input_tokens: r.prompt,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: r.completion,
        service_tier: 'standard',
      },
    });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  sse(res, 'message_start', {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: r.prompt,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 1,
      },
    },
  });
  let index = 0;
  let held = false;
  if (r.text !== '') {
    sse(res, 'content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'text', text: '' },
    });
    sse(res, 'ping', { type: 'ping' });
    for (const piece of r.text.split(/(?<= )/)) {
      sse(res, 'content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'text_delta', text: piece },
      });
      if (!held) {
        held = true;
        await gate.wait();
      }
    }
    sse(res, 'content_block_stop', { type: 'content_block_stop', index });
    index++;
  }
  if (r.tool) {
    sse(res, 'content_block_start', {
      type: 'content_block_start',
      index,
      content_block: { type: 'tool_use', id: ANTHROPIC_TOOL_USE_ID, name: r.tool.name, input: {} },
    });
    for (const piece of ['', '{"city": ', '"Paris"}'])
      sse(res, 'content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: piece },
      });
    sse(res, 'content_block_stop', { type: 'content_block_stop', index });
  }
  sse(res, 'message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: r.completion },
  });
  sse(res, 'message_stop', { type: 'message_stop' });
  res.end();
}

// --- Gemini -----------------------------------------------------------------------------------

function geminiError(res: ServerResponse, status: number, message?: string): void {
  const statuses: Record<number, string> = {
    400: 'INVALID_ARGUMENT',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    429: 'RESOURCE_EXHAUSTED',
    500: 'INTERNAL',
    503: 'UNAVAILABLE',
  };
  json(res, status, {
    error: {
      code: status,
      message:
        message ??
        (status === 429
          ? 'Resource has been exhausted (e.g. check quota).'
          : 'An internal error has occurred.'),
      status: statuses[status] ?? 'INTERNAL',
    },
  });
}

async function geminiAnswer(
  res: ServerResponse,
  model: string,
  stream: boolean,
  body: Record<string, unknown>,
  gate: Gate,
): Promise<void> {
  const r = reply('gemini', geminiAsChat(body));
  const responseId = 'mKnQaLH0L4yC1dkP7aSzsAI';
  const usage = (completion: number | undefined) => ({
    promptTokenCount: r.prompt,
    ...(completion === undefined ? {} : { candidatesTokenCount: completion }),
    totalTokenCount: r.prompt + (completion ?? 0),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: r.prompt }],
  });
  const parts = r.tool
    ? [{ functionCall: { name: r.tool.name, args: { city: 'Paris' } } }]
    : [{ text: r.text }];
  if (!stream) {
    json(res, 200, {
      candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', avgLogprobs: -0.05, index: 0 }],
      usageMetadata: usage(r.completion),
      modelVersion: model,
      responseId,
    });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\r\n\r\n`);
  if (r.tool) {
    await gate.wait();
    event({
      candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: usage(r.completion),
      modelVersion: model,
      responseId,
    });
    res.end();
    return;
  }
  const pieces = r.text.split(/(?<= )/);
  for (const [i, piece] of pieces.entries()) {
    const last = i === pieces.length - 1;
    event({
      candidates: [
        {
          content: { parts: [{ text: piece }], role: 'model' },
          ...(last ? { finishReason: 'STOP' } : {}),
          index: 0,
        },
      ],
      usageMetadata: usage(last ? r.completion : undefined),
      modelVersion: model,
      responseId,
    });
    if (i === 0) await gate.wait();
  }
  res.end();
}

// --- the server -------------------------------------------------------------------------------

/** Holds streams after their first token (exported for the Bedrock provider). */
export class Gate {
  #open = true;
  #waiters: (() => void)[] = [];

  close(): () => void {
    this.#open = false;
    return () => {
      this.#open = true;
      for (const w of this.#waiters.splice(0)) w();
    };
  }

  wait(): Promise<void> {
    return this.#open ? Promise.resolve() : new Promise((resolve) => this.#waiters.push(resolve));
  }
}

export interface ProviderOptions {
  /** The API key the provider accepts; anything else is answered 401. */
  apiKey?: string;
}

/** Starts a provider of `kind` on a random loopback port. */
export async function startLlmProvider(
  kind: ProviderKind,
  options: ProviderOptions = {},
): Promise<LlmProvider> {
  const apiKey = options.apiKey ?? `${kind}-test-key`;
  const requests: SeenRequest[] = [];
  const mishaps: Mishap[] = [];
  const gate = new Gate();
  const sockets = new Set<Socket>();
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      body = {};
    }
    requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    const mishap = mishaps.shift();
    if (mishap === 'hang') return; // never answered; the socket is closed with the server
    if (kind === 'gemini') {
      const embed = /^\/v1beta\/models\/([^/:]+):batchEmbedContents$/.exec(req.url ?? '');
      if (embed !== null) {
        if (req.headers['x-goog-api-key'] !== apiKey)
          return geminiError(res, 400, 'API key not valid. Please pass a valid API key.');
        if (mishap !== undefined) return geminiError(res, mishap === 529 ? 503 : mishap);
        const list = body.requests as
          | { model?: string; content?: { parts?: { text?: string }[] }; outputDimensionality?: number }[]
          | undefined;
        if (!Array.isArray(list) || list.length === 0)
          return geminiError(res, 400, '* BatchEmbedContentsRequest.requests: contents is not specified');
        if (list.some((r) => r.model !== `models/${decodeURIComponent(embed[1]!)}`))
          return geminiError(res, 400, 'Model names should start with `models/` and match the path.');
        return json(res, 200, {
          embeddings: list.map((r) => ({
            values: embeddingOf(
              (r.content?.parts ?? []).map((p) => p.text ?? '').join(''),
              r.outputDimensionality,
            ),
          })),
        });
      }
      const match = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)(\?alt=sse)?$/.exec(
        req.url ?? '',
      );
      if (req.method !== 'POST' || match === null) return geminiError(res, 404, `Not found: ${req.url}`);
      if (req.headers['x-goog-api-key'] !== apiKey)
        return geminiError(res, 400, 'API key not valid. Please pass a valid API key.');
      if (mishap !== undefined) return geminiError(res, mishap === 529 ? 503 : mishap);
      if (!Array.isArray(body.contents)) return geminiError(res, 400, 'contents is not specified');
      await geminiAnswer(
        res,
        decodeURIComponent(match[1]!),
        match[2] === 'streamGenerateContent',
        body,
        gate,
      );
      return;
    }
    if (kind === 'openai') {
      const route = (req.url ?? '').split('?')[0]!;
      if (req.method !== 'POST' || !(route.endsWith('/chat/completions') || route.endsWith('/embeddings'))) {
        json(res, 404, {
          error: {
            message: 'Unknown request URL',
            type: 'invalid_request_error',
            param: null,
            code: 'unknown_url',
          },
        });
        return;
      }
      const auth = req.headers['api-key'] ?? req.headers.authorization;
      if (auth !== `Bearer ${apiKey}` && auth !== apiKey) {
        json(res, 401, {
          error: {
            message: 'Incorrect API key provided.',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        });
        return;
      }
      if (mishap !== undefined) return openAiError(res, mishap);
      if (route.endsWith('/embeddings')) {
        const inputs = embeddingInputs(body.input);
        if (inputs === undefined || typeof body.model !== 'string') {
          json(res, 400, {
            error: {
              message: "'input' is a required property",
              type: 'invalid_request_error',
              param: 'input',
              code: null,
            },
          });
          return;
        }
        const tokens = inputs.reduce((n, t) => n + words(t), 0);
        const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
        json(res, 200, {
          object: 'list',
          data: inputs.map((text, index) => {
            const vector = embeddingOf(text, dimensions);
            return {
              object: 'embedding',
              index,
              embedding: body.encoding_format === 'base64' ? float32Base64(vector) : vector,
            };
          }),
          model: body.model,
          usage: { prompt_tokens: tokens, total_tokens: tokens },
        });
        return;
      }
      if (!Array.isArray(body.messages) || typeof body.model !== 'string') {
        json(res, 400, {
          error: {
            message: "Missing required parameter: 'messages'.",
            type: 'invalid_request_error',
            param: 'messages',
            code: 'missing_required_parameter',
          },
        });
        return;
      }
      await openAiAnswer(res, body, gate);
      return;
    }
    if (req.method !== 'POST' || req.url !== '/v1/messages') {
      anthropicError(res, 404, 'not_found_error', `Not found: ${req.url}`);
      return;
    }
    if (req.headers['x-api-key'] !== apiKey) return anthropicError(res, 401, undefined, 'invalid x-api-key');
    if (req.headers['anthropic-version'] !== '2023-06-01')
      return anthropicError(res, 400, undefined, 'anthropic-version: header is required');
    if (mishap !== undefined) return anthropicError(res, mishap);
    if (typeof body.max_tokens !== 'number')
      return anthropicError(res, 400, undefined, 'max_tokens: Field required');
    if (!Array.isArray(body.messages)) return anthropicError(res, 400, undefined, 'messages: Field required');
    await anthropicAnswer(res, body, gate);
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.destroy(err as Error);
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    kind,
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    next: (...list) => mishaps.push(...list),
    holdAfterFirstToken: () => gate.close(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
