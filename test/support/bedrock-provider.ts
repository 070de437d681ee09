/**
 * A local Amazon Bedrock Runtime speaking the Converse API
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
 * `POST /model/{modelId}/converse` answers `{output: {message}, stopReason, usage, metrics}`;
 * `POST /model/{modelId}/converse-stream` answers `application/vnd.amazon.eventstream`, binary
 * frames (prelude with total and headers length and its CRC32, headers `:event-type`,
 * `:content-type`, `:message-type`, the JSON payload, the message CRC32) for messageStart,
 * contentBlockStart (tool use), contentBlockDelta, contentBlockStop, messageStop and metadata,
 * each payload padded with a `p` field as Bedrock does. Errors: the HTTP status, the type in
 * `x-amzn-ErrorType` and `{"message"}`; in a stream, an `exception` frame.
 *
 * Every request's SigV4 signature is checked here, independently of the project's signer:
 * the canonical request from what arrived (the path's segments encoded once more, as every
 * service but S3 wants), scope `<day>/<region>/bedrock/aws4_request`, the key derived from the
 * secret of the access key named in the Credential, the session token required when the key pair
 * has one. A Bedrock API key (`Authorization: Bearer`) is accepted when one is configured.
 *
 * InvokeModel (`POST /model/{modelId}/invoke`) answers the embedding models: Titan Text
 * Embeddings (`{inputText, dimensions?}` → `{embedding, inputTextTokenCount}`) and Cohere Embed
 * (`{texts, input_type}` → `{id, embeddings, texts, response_type: "embeddings_floats"}`), with
 * `x-amzn-bedrock-input-token-count`; vectors are `embeddingOf` their text.
 *
 * Answers are the deterministic ones of test/support/llm-providers.ts (`Hello from Bedrock: …`,
 * the first tool called with `{"city":"Paris"}` after the text `Let me check.`).
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import { embeddingOf, Gate, reply } from './llm-providers.js';

export const BEDROCK_TOOL_USE_ID = 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q';

export type BedrockMishap = 429 | 500 | 503 | 'stream-exception';

export interface BedrockSeen {
  path: string;
  modelId: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  /** `ok`, or the exception type the signature check gave. */
  verdict: string;
  accessKeyId: string | undefined;
}

export interface BedrockProvider {
  readonly url: string;
  readonly region: string;
  readonly requests: BedrockSeen[];
  addCredentials(accessKeyId: string, secretAccessKey: string, sessionToken?: string): void;
  /** A Bedrock API key the server accepts as `Authorization: Bearer`. */
  addApiKey(key: string): void;
  next(...mishaps: BedrockMishap[]): void;
  holdAfterFirstToken(): () => void;
  close(): Promise<void>;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, text: string) => createHmac('sha256', key).update(text).digest();

/** RFC 3986 encoding of every byte but the unreserved ones. */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

// --- event-stream framing ----------------------------------------------------------------------

function frame(headers: Record<string, string>, payload: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name);
    const v = Buffer.from(value);
    const head = Buffer.alloc(1 + n.length + 1 + 2);
    head.writeUInt8(n.length, 0);
    n.copy(head, 1);
    head.writeUInt8(7, 1 + n.length); // string
    head.writeUInt16BE(v.length, 2 + n.length);
    parts.push(head, v);
  }
  const headerBytes = Buffer.concat(parts);
  const total = 12 + headerBytes.length + payload.length + 4;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(headerBytes.length, 4);
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8);
  headerBytes.copy(out, 12);
  payload.copy(out, 12 + headerBytes.length);
  out.writeUInt32BE(crc32(out.subarray(0, total - 4)), total - 4);
  return out;
}

/** Bedrock pads every event with `p`, a run of letters hiding the token lengths. */
const PADDING = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456';

export function eventFrame(type: string, payload: Record<string, unknown>): Buffer {
  return frame(
    { ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' },
    Buffer.from(JSON.stringify({ ...payload, p: PADDING.slice(0, 5 + (type.length % 20)) })),
  );
}

export function exceptionFrame(type: string, message: string): Buffer {
  return frame(
    { ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' },
    Buffer.from(JSON.stringify({ message })),
  );
}

// --- the server --------------------------------------------------------------------------------

/** A Converse body seen as messages and tools, for the shared `reply`. */
function converseAsChat(body: Record<string, unknown>): Record<string, unknown> {
  type Block = { text?: string; toolResult?: { content?: { text?: string }[] } };
  const messages = ((body.messages ?? []) as { role: string; content?: Block[] }[]).map((m) => {
    const result = m.content?.find((b) => b.toolResult !== undefined)?.toolResult;
    if (result !== undefined)
      return { role: 'tool', content: (result.content ?? []).map((c) => c.text ?? '').join('') };
    return { role: m.role, content: (m.content ?? []).map((b) => b.text ?? '').join(' ') };
  });
  const system = ((body.system ?? []) as { text?: string }[]).map((s) => s.text ?? '').join(' ');
  const tools = (body.toolConfig as { tools?: { toolSpec: { name: string } }[] } | undefined)?.tools;
  return {
    messages: system === '' ? messages : [{ role: 'system', content: system }, ...messages],
    ...(tools === undefined ? {} : { tools: tools.map((t) => ({ name: t.toolSpec.name })) }),
  };
}

const ERRORS: Record<number, [string, string]> = {
  400: ['ValidationException', 'Malformed input request, please reformat your input and try again.'],
  403: ['AccessDeniedException', "You don't have access to the model with the specified model ID."],
  404: ['ResourceNotFoundException', 'The requested resource could not be found.'],
  429: ['ThrottlingException', 'Too many requests, please wait before trying again.'],
  500: ['InternalServerException', 'The server encountered an error processing your request.'],
  503: ['ServiceUnavailableException', 'The service is unavailable. Please try again later.'],
};

export async function startBedrockProvider(region = 'us-east-1'): Promise<BedrockProvider> {
  const credentials = new Map<string, { secret: string; token: string | undefined }>();
  const apiKeys = new Set<string>();
  const requests: BedrockSeen[] = [];
  const mishaps: BedrockMishap[] = [];
  const gate = new Gate();
  const sockets = new Set<Socket>();

  const verify = (req: IncomingMessage, body: Buffer): { type: string; message: string } | undefined => {
    const auth = req.headers.authorization;
    if (typeof auth === 'string' && auth.startsWith('Bearer ')) {
      return apiKeys.has(auth.slice(7))
        ? undefined
        : {
            type: 'UnrecognizedClientException',
            message: 'Invalid API Key format: Must start with pre-defined prefix',
          };
    }
    const m =
      typeof auth === 'string'
        ? /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
            auth,
          )
        : null;
    if (m === null)
      return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
    const [, key, day, scopeRegion, service, signedHeaders, signature] = m as unknown as string[];
    const held = credentials.get(key!);
    if (held === undefined)
      return {
        type: 'UnrecognizedClientException',
        message: 'The security token included in the request is invalid.',
      };
    if (scopeRegion !== region || service !== 'bedrock')
      return {
        type: 'InvalidSignatureException',
        message: `Credential should be scoped to a valid region and service: ${scopeRegion}/${service}`,
      };
    const date = req.headers['x-amz-date'];
    if (typeof date !== 'string' || !date.startsWith(day!))
      return {
        type: 'InvalidSignatureException',
        message: 'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP',
      };
    const when = Date.parse(
      `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
    );
    if (!Number.isFinite(when) || Math.abs(Date.now() - when) > 5 * 60 * 1000)
      return { type: 'InvalidSignatureException', message: 'Signature expired' };
    const names = signedHeaders!.split(';');
    for (const required of ['host', 'x-amz-date'])
      if (!names.includes(required))
        return { type: 'InvalidSignatureException', message: `'${required}' must be a signed header` };
    if (
      held.token !== undefined &&
      (req.headers['x-amz-security-token'] !== held.token || !names.includes('x-amz-security-token'))
    )
      return {
        type: 'UnrecognizedClientException',
        message: 'The security token included in the request is invalid.',
      };
    const canonicalHeaders = names
      .map(
        (n) =>
          `${n}:${String(req.headers[n] ?? '')
            .trim()
            .replace(/\s+/g, ' ')}\n`,
      )
      .join('');
    const [rawPath, rawQuery = ''] = (req.url ?? '/').split('?') as [string, string?];
    const canonicalUri = rawPath.split('/').map(uriEncode).join('/');
    const canonicalQuery =
      rawQuery === ''
        ? ''
        : [...new URLSearchParams(rawQuery)]
            .map(([n, v]) => `${uriEncode(n)}=${uriEncode(v)}`)
            .sort()
            .join('&');
    const canonical = [
      req.method,
      canonicalUri,
      canonicalQuery,
      canonicalHeaders,
      signedHeaders,
      sha256(body),
    ].join('\n');
    const scope = `${day}/${region}/bedrock/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonical)].join('\n');
    const signingKey = hmac(hmac(hmac(hmac(`AWS4${held.secret}`, day!), region), 'bedrock'), 'aws4_request');
    if (createHmac('sha256', signingKey).update(toSign).digest('hex') !== signature)
      return {
        type: 'InvalidSignatureException',
        message:
          'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
      };
    return undefined;
  };

  const error = (res: ServerResponse, status: number, type?: string, message?: string) => {
    const [t, m] = ERRORS[status] ?? ['InternalServerException', 'error'];
    res.writeHead(status, {
      'content-type': 'application/json',
      'x-amzn-requestid': randomUUID(),
      'x-amzn-errortype': `${type ?? t}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    });
    res.end(JSON.stringify({ message: message ?? m }));
  };

  const answer = async (
    res: ServerResponse,
    stream: boolean,
    body: Record<string, unknown>,
    mishap: BedrockMishap | undefined,
  ) => {
    const r = reply('bedrock', converseAsChat(body));
    const text = r.tool ? 'Let me check.' : r.text;
    const stop = r.tool ? 'tool_use' : 'end_turn';
    const usage = { inputTokens: r.prompt, outputTokens: r.completion, totalTokens: r.prompt + r.completion };
    if (!stream) {
      const content: Record<string, unknown>[] = [{ text }];
      if (r.tool)
        content.push({
          toolUse: { toolUseId: BEDROCK_TOOL_USE_ID, name: r.tool.name, input: { city: 'Paris' } },
        });
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': randomUUID() });
      res.end(
        JSON.stringify({
          output: { message: { role: 'assistant', content } },
          stopReason: stop,
          usage,
          metrics: { latencyMs: 412 },
        }),
      );
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/vnd.amazon.eventstream',
      'x-amzn-requestid': randomUUID(),
    });
    // Frames are written cut in two, so the gateway sees messages split across reads.
    const write = (bytes: Buffer) => {
      const cut = Math.floor(bytes.length / 2) + 1;
      res.write(bytes.subarray(0, cut));
      res.write(bytes.subarray(cut));
    };
    write(eventFrame('messageStart', { role: 'assistant' }));
    if (mishap === 'stream-exception') {
      res.end(exceptionFrame('modelStreamErrorException', 'The model stream failed: upstream closed.'));
      return;
    }
    const pieces = text.split(/(?<= )/);
    for (const [i, piece] of pieces.entries()) {
      write(eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: piece } }));
      if (i === 0) await gate.wait();
    }
    write(eventFrame('contentBlockStop', { contentBlockIndex: 0 }));
    if (r.tool) {
      write(
        eventFrame('contentBlockStart', {
          contentBlockIndex: 1,
          start: { toolUse: { toolUseId: BEDROCK_TOOL_USE_ID, name: r.tool.name } },
        }),
      );
      for (const piece of ['{"ci', 'ty": "Pa', 'ris"}'])
        write(
          eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: piece } } }),
        );
      write(eventFrame('contentBlockStop', { contentBlockIndex: 1 }));
    }
    write(eventFrame('messageStop', { stopReason: stop }));
    res.end(eventFrame('metadata', { usage, metrics: { latencyMs: 412 } }));
  };

  const invoke = (res: ServerResponse, modelId: string, body: Record<string, unknown>) => {
    const words = (t: string) => t.split(/\s+/).filter((w) => w !== '').length;
    const send = (payload: unknown, tokens: number) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'x-amzn-requestid': randomUUID(),
        'x-amzn-bedrock-input-token-count': String(tokens),
        'x-amzn-bedrock-invocation-latency': '35',
      });
      res.end(JSON.stringify(payload));
    };
    if (modelId.startsWith('amazon.titan-embed')) {
      if (typeof body.inputText !== 'string')
        return error(
          res,
          400,
          undefined,
          'Malformed input request: #: required key [inputText] not found, please reformat your input and try again.',
        );
      const dimensions = typeof body.dimensions === 'number' ? body.dimensions : undefined;
      const tokens = words(body.inputText);
      return send(
        {
          embedding: embeddingOf(body.inputText, dimensions),
          embeddingsByType: {},
          inputTextTokenCount: tokens,
        },
        tokens,
      );
    }
    if (modelId.startsWith('cohere.embed')) {
      const texts = body.texts;
      if (!Array.isArray(texts) || typeof body.input_type !== 'string')
        return error(
          res,
          400,
          undefined,
          'Malformed input request: #: required key [input_type] not found, please reformat your input and try again.',
        );
      return send(
        {
          id: randomUUID(),
          embeddings: (texts as string[]).map((t) => embeddingOf(t)),
          texts,
          response_type: 'embeddings_floats',
        },
        (texts as string[]).reduce((n, t) => n + words(t), 0),
      );
    }
    return error(res, 400, undefined, 'The provided model identifier is invalid.');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const match = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/.exec(
      (req.url ?? '').split('?')[0]!,
    );
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw.toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      // left empty: answered as a ValidationException below
    }
    const failed = verify(req, raw);
    requests.push({
      path: req.url ?? '',
      modelId: match === null ? '' : decodeURIComponent(match[1]!),
      headers: req.headers,
      body,
      verdict: failed?.type ?? 'ok',
      accessKeyId: /Credential=([^/]+)/.exec(String(req.headers.authorization ?? ''))?.[1],
    });
    if (failed !== undefined) return error(res, 403, failed.type, failed.message);
    if (req.method !== 'POST' || match === null)
      return error(res, 404, 'UnknownOperationException', 'Unknown operation');
    const mishap = mishaps.shift();
    if (typeof mishap === 'number') return error(res, mishap);
    if (match[2] === 'invoke') return invoke(res, decodeURIComponent(match[1]!), body);
    if (!Array.isArray(body.messages) || body.messages.length === 0)
      return error(
        res,
        400,
        undefined,
        'A conversation must start with a user message. Try again with a conversation that starts with a user message.',
      );
    await answer(res, match[2] === 'converse-stream', body, mishap);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).catch((err: unknown) => res.destroy(err as Error));
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    region,
    requests,
    addCredentials: (id, secret, token) => void credentials.set(id, { secret, token }),
    addApiKey: (key) => void apiKeys.add(key),
    next: (...list) => mishaps.push(...list),
    holdAfterFirstToken: () => gate.close(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
