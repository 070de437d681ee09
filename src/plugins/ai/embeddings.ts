import { percentEncode } from '../../signing/percent-encode.js';
import type { AiUsage } from './formats/types.js';
import type { ProviderName } from './providers.js';

/**
 * The OpenAI embeddings API (`POST …/embeddings`) as a client format of ai-proxy
 * (docs/plugins/ai-proxy.md#embeddings), and what each provider makes of it: the OpenAI wire
 * (`/v1/embeddings`, Azure's deployment path), Gemini `:batchEmbedContents`, Bedrock InvokeModel
 * for Titan and Cohere embedding models. Anthropic has no embeddings API.
 */

export interface EmbeddingsRequest {
  /** The client's body, parsed; its unknown keys are kept for OpenAI-wire targets. */
  body: Record<string, unknown>;
  model: string;
  /** The inputs as text; null when the client sent token arrays (OpenAI-wire targets only). */
  texts: string[] | null;
  /** The client asked for `encoding_format: base64` (the openai SDK does unless told otherwise). */
  base64: boolean;
  dimensions: number | undefined;
}

/** Parses and checks an embeddings body; a string says what is wrong with it. */
export function parseEmbeddingsRequest(raw: Buffer | string | null): EmbeddingsRequest | string {
  if (raw === null || raw.length === 0) return 'the request has no body';
  let body: unknown;
  try {
    body = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    return 'the request body is not JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'the request body is not a JSON object';
  const fields = body as Record<string, unknown>;
  const input = fields.input;
  let texts: string[] | null;
  if (typeof input === 'string') texts = [input];
  else if (Array.isArray(input) && input.length > 0 && input.every((x) => typeof x === 'string'))
    texts = input;
  else if (
    Array.isArray(input) &&
    input.length > 0 &&
    (input.every((x) => typeof x === 'number') ||
      input.every((x) => Array.isArray(x) && x.every((n) => typeof n === 'number')))
  )
    texts = null;
  else return "'input' must be a string, an array of strings, or token arrays";
  if (fields.model !== undefined && typeof fields.model !== 'string') return "'model' must be a string";
  const format = fields.encoding_format;
  if (format !== undefined && format !== 'float' && format !== 'base64')
    return "'encoding_format' must be float or base64";
  const dimensions = fields.dimensions;
  if (dimensions !== undefined && (!Number.isInteger(dimensions) || (dimensions as number) < 1))
    return "'dimensions' must be a positive integer";
  return {
    body: fields,
    model: typeof fields.model === 'string' ? fields.model : '',
    texts,
    base64: format === 'base64',
    dimensions: dimensions as number | undefined,
  };
}

/** The path ends in `/embeddings`: OpenAI's embeddings API. */
export function isEmbeddingsPath(path: string): boolean {
  const p = path.endsWith('/') ? path.slice(0, -1) : path;
  return p.endsWith('/embeddings');
}

type BedrockFamily = 'titan' | 'cohere';

function bedrockFamily(model: string): BedrockFamily | undefined {
  // Inference profiles prefix the model id with a geography (us., eu., apac.); ARNs end with it.
  const id = model.slice(model.lastIndexOf('/') + 1).replace(/^(us|eu|apac|global)\./, '');
  if (id.startsWith('amazon.titan-embed')) return 'titan';
  if (id.startsWith('cohere.embed')) return 'cohere';
  return undefined;
}

/** Why `provider` cannot embed `req` with `model`; undefined when it can. */
export function embeddingsUnsupported(
  provider: ProviderName,
  model: string,
  req: EmbeddingsRequest,
): string | undefined {
  if (provider === 'anthropic') return 'anthropic has no embeddings API';
  if (req.texts === null && !OPENAI_WIRE.has(provider))
    return `${provider} takes text inputs only, not token arrays`;
  if (provider === 'bedrock' && bedrockFamily(model) === undefined)
    return `bedrock embeddings take Titan (amazon.titan-embed-*) or Cohere (cohere.embed-*) models, not ${model}`;
  return undefined;
}

const OPENAI_WIRE = new Set<ProviderName>(['openai', 'azure-openai', 'mistral', 'openai-compatible']);

/** One provider call of an embeddings request (Titan embeds one text per call). */
export interface EmbeddingsCall {
  path: string;
  body: Buffer;
}

export function embeddingsCalls(
  provider: ProviderName,
  model: string,
  apiVersion: string,
  req: EmbeddingsRequest,
): EmbeddingsCall[] {
  const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
  switch (provider) {
    case 'gemini': {
      const name = model.startsWith('models/') ? model.slice(7) : model;
      return [
        {
          path: `/v1beta/models/${encodeURIComponent(name)}:batchEmbedContents`,
          body: json({
            requests: req.texts!.map((text) => ({
              model: `models/${name}`,
              content: { parts: [{ text }] },
              ...(req.dimensions === undefined ? {} : { outputDimensionality: req.dimensions }),
            })),
          }),
        },
      ];
    }
    case 'bedrock': {
      const path = `/model/${percentEncode(model)}/invoke`;
      if (bedrockFamily(model) === 'cohere')
        return [{ path, body: json({ texts: req.texts, input_type: 'search_document' }) }];
      return req.texts!.map((inputText) => ({
        path,
        body: json({ inputText, ...(req.dimensions === undefined ? {} : { dimensions: req.dimensions }) }),
      }));
    }
    case 'azure-openai':
    case 'openai': {
      const path =
        provider === 'openai'
          ? '/v1/embeddings'
          : `/openai/deployments/${encodeURIComponent(model)}/embeddings?api-version=${encodeURIComponent(apiVersion)}`;
      return [{ path, body: json({ ...req.body, model }) }];
    }
    default: {
      // mistral, openai-compatible: floats asked for; the gateway encodes base64 itself.
      const { encoding_format: _format, ...rest } = req.body;
      return [{ path: '/v1/embeddings', body: json({ ...rest, model }) }];
    }
  }
}

export interface EmbeddingsAnswer {
  body: Record<string, unknown>;
  usage: AiUsage;
}

/** One provider answer: its body and the `x-amzn-bedrock-input-token-count` header (Bedrock). */
export interface EmbeddingsRaw {
  body: Buffer;
  inputTokens: number | undefined;
}

/**
 * The answers of `embeddingsCalls` as one OpenAI embeddings response in the encoding the client
 * asked for; undefined when an answer is not what the provider documents. Usage is the
 * provider's; Gemini reports none, so its prompt tokens are estimated (4 characters a token).
 */
export function embeddingsAnswer(
  provider: ProviderName,
  model: string,
  req: EmbeddingsRequest,
  raws: EmbeddingsRaw[],
): EmbeddingsAnswer | undefined {
  const parsed = raws.map((r) => parseJson(r.body));
  if (parsed.some((p) => p === undefined)) return undefined;
  let vectors: (number[] | string)[];
  let prompt: number;
  if (provider === 'gemini') {
    const list = (parsed[0] as { embeddings?: { values?: unknown }[] }).embeddings;
    if (!Array.isArray(list)) return undefined;
    vectors = list.map((e) => e.values as number[]);
    prompt = req.texts!.reduce((n, t) => n + Math.ceil(t.length / 4), 0);
  } else if (provider === 'bedrock') {
    if (bedrockFamily(model) === 'cohere') {
      const list = (parsed[0] as { embeddings?: unknown }).embeddings;
      if (!Array.isArray(list)) return undefined;
      vectors = list as number[][];
    } else vectors = parsed.map((p) => (p as { embedding?: unknown }).embedding as number[]);
    prompt = raws.reduce(
      (n, r, i) =>
        n + (r.inputTokens ?? (parsed[i] as { inputTextTokenCount?: number }).inputTextTokenCount ?? 0),
      0,
    );
  } else {
    const body = parsed[0] as { data?: { embedding?: unknown; index?: number }[]; usage?: Partial<AiUsage> };
    if (!Array.isArray(body.data)) return undefined;
    const usage = body.usage ?? {};
    const p = usage.prompt_tokens ?? 0;
    const total = usage.total_tokens ?? p;
    if (provider === 'openai' || provider === 'azure-openai')
      return {
        body: body,
        usage: { prompt_tokens: p, completion_tokens: 0, total_tokens: total },
      };
    vectors = body.data.map((d) => d.embedding as number[]);
    prompt = p;
  }
  if (!vectors.every((v) => Array.isArray(v) && v.every((x) => typeof x === 'number'))) return undefined;
  const data = vectors.map((v, index) => ({
    object: 'embedding',
    index,
    embedding: req.base64 ? toBase64(v as number[]) : v,
  }));
  const usage = { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt };
  return {
    body: { object: 'list', data, model, usage: { prompt_tokens: prompt, total_tokens: prompt } },
    usage,
  };
}

/** Float32 little-endian bytes in base64: OpenAI's `encoding_format: base64`. */
function toBase64(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}

function parseJson(raw: Buffer): unknown {
  try {
    const value = JSON.parse(raw.toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}
