import { percentEncode } from '../../signing/percent-encode.js';
import { ANTHROPIC_VERSION, openAiRequestToAnthropic } from './formats/anthropic.js';
import { openAiRequestToBedrock } from './formats/bedrock.js';
import { toOpenAiRequest, type AiRequest } from './formats/client.js';
import { openAiRequestToGemini } from './formats/gemini.js';
import type { AnthropicRequest, OpenAiChatRequest } from './formats/types.js';

export const PROVIDERS = [
  'openai',
  'azure-openai',
  'anthropic',
  'gemini',
  'bedrock',
  'mistral',
  'openai-compatible',
] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** The wire format a provider speaks. */
export type Wire = 'openai' | 'anthropic' | 'gemini' | 'bedrock';

/** What the gateway needs to know of one provider (docs/plugins/ai-proxy.md#providers). */
export interface ProviderSpec {
  readonly wire: Wire;
  /** Base URL when the target names no `endpoint`; undefined: `endpoint` is required. */
  readonly defaultEndpoint: string | undefined;
  /** Path after the endpoint's own prefix, with its query. */
  path(model: string, stream: boolean, apiVersion: string): string;
  /** The headers carrying `key`, as the provider wants them (flat list). */
  auth(key: string): string[];
  /** Headers every request carries (flat list). */
  readonly fixedHeaders: readonly string[];
  /** Asks for `stream_options.include_usage` (OpenAI's wire; Mistral sends usage unasked). */
  readonly streamUsageOption: boolean;
  /** Where a translated token limit goes on the OpenAI wire. */
  readonly maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** The `accept` of a streamed call (default `text/event-stream`). */
  readonly streamAccept?: string;
}

const bearer = (key: string): string[] => ['authorization', `Bearer ${key}`];
const chatPath = (): string => '/v1/chat/completions';

export const PROVIDER_SPECS: Readonly<Record<ProviderName, ProviderSpec>> = {
  openai: {
    wire: 'openai',
    defaultEndpoint: 'https://api.openai.com',
    path: chatPath,
    auth: bearer,
    fixedHeaders: [],
    streamUsageOption: true,
    maxTokensField: 'max_completion_tokens',
  },
  'azure-openai': {
    wire: 'openai',
    defaultEndpoint: undefined,
    path: (model, _stream, apiVersion) =>
      `/openai/deployments/${encodeURIComponent(model)}/chat/completions?api-version=${encodeURIComponent(apiVersion)}`,
    auth: (key) => ['api-key', key],
    fixedHeaders: [],
    streamUsageOption: true,
    maxTokensField: 'max_completion_tokens',
  },
  mistral: {
    wire: 'openai',
    defaultEndpoint: 'https://api.mistral.ai',
    path: chatPath,
    auth: bearer,
    fixedHeaders: [],
    streamUsageOption: false,
    maxTokensField: 'max_tokens',
  },
  'openai-compatible': {
    wire: 'openai',
    defaultEndpoint: undefined,
    path: chatPath,
    auth: bearer,
    fixedHeaders: [],
    streamUsageOption: true,
    maxTokensField: 'max_tokens',
  },
  anthropic: {
    wire: 'anthropic',
    defaultEndpoint: 'https://api.anthropic.com',
    path: () => '/v1/messages',
    auth: (key) => ['x-api-key', key],
    fixedHeaders: ['anthropic-version', ANTHROPIC_VERSION],
    streamUsageOption: false,
    maxTokensField: 'max_tokens',
  },
  gemini: {
    wire: 'gemini',
    defaultEndpoint: 'https://generativelanguage.googleapis.com',
    path: (model, stream) => {
      const name = encodeURIComponent(model.startsWith('models/') ? model.slice(7) : model);
      return stream
        ? `/v1beta/models/${name}:streamGenerateContent?alt=sse`
        : `/v1beta/models/${name}:generateContent`;
    },
    auth: (key) => ['x-goog-api-key', key],
    fixedHeaders: [],
    streamUsageOption: false,
    maxTokensField: 'max_tokens',
  },
  // Signed with SigV4 (the target's `aws`), or a Bedrock API key as a bearer token.
  bedrock: {
    wire: 'bedrock',
    defaultEndpoint: undefined, // https://bedrock-runtime.<aws.region>.amazonaws.com, set by ai-proxy
    path: (model, stream) => `/model/${percentEncode(model)}/${stream ? 'converse-stream' : 'converse'}`,
    auth: bearer,
    fixedHeaders: [],
    streamUsageOption: false,
    maxTokensField: 'max_tokens',
    streamAccept: 'application/vnd.amazon.eventstream',
  },
};

/** The Azure OpenAI `api-version` query when a target names none. */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';

export interface BodyOptions {
  /** The target's `model`, or the client's when the target names none. */
  model: string;
  stream: boolean;
  defaultMaxTokens: number;
}

/**
 * The request body for a provider: the client's own body when it already speaks the provider's
 * wire (model replaced), a translation otherwise. OpenAI-wire streams ask for usage.
 */
export function providerBody(
  spec: ProviderSpec,
  req: AiRequest,
  options: BodyOptions,
): Record<string, unknown> {
  // Gemini and Bedrock name the model and streaming in the path, not the body.
  if (spec.wire === 'gemini') return openAiRequestToGemini(toOpenAiRequest(req));
  if (spec.wire === 'bedrock') return openAiRequestToBedrock(toOpenAiRequest(req));
  if (spec.wire === 'anthropic') {
    const body: AnthropicRequest =
      req.format === 'anthropic'
        ? { ...(req.body as AnthropicRequest) }
        : openAiRequestToAnthropic(req.body as OpenAiChatRequest, options.defaultMaxTokens);
    body.model = options.model;
    const asked = body as AnthropicRequest & { max_completion_tokens?: number };
    if (asked.max_completion_tokens !== undefined) {
      body.max_tokens ??= asked.max_completion_tokens;
      delete asked.max_completion_tokens;
    }
    body.max_tokens ??= options.defaultMaxTokens;
    return body;
  }
  let body: OpenAiChatRequest;
  if (req.format === 'openai') body = { ...(req.body as OpenAiChatRequest) };
  else {
    body = toOpenAiRequest(req);
    if (body.max_tokens !== undefined && spec.maxTokensField === 'max_completion_tokens') {
      body.max_completion_tokens = body.max_tokens;
      delete body.max_tokens;
    }
  }
  body.model = options.model;
  if (options.stream && spec.streamUsageOption)
    body.stream_options = { ...body.stream_options, include_usage: true };
  return body;
}
