import { ConfigError, definePlugin, type PluginEnv } from '../../core/plugin.js';
import { acquirePool } from '../../outbound/pool-registry.js';
import { SigV4Signer } from '../../signing/sigv4.js';
import { loadTlsMaterial } from '../../tls/client.js';
import { aiMetrics } from './ai-metrics.js';
import { AiProxyNode, type AiTarget } from './ai-proxy-node.js';
import { DEFAULT_MAX_TOKENS } from './formats/anthropic.js';
import { DEFAULT_AZURE_API_VERSION, PROVIDER_SPECS, PROVIDERS, type ProviderName } from './providers.js';

export interface AiTargetConfig {
  name: string;
  provider: ProviderName;
  endpoint?: string;
  model?: string;
  api_key?: string;
  priority: number;
  weight: number;
  timeout_ms?: number;
  default_max_tokens: number;
  api_version?: string;
  aws?: AwsConfig;
}

/** bedrock: the region and, unless the environment has them, the credentials SigV4 signs with. */
export interface AwsConfig {
  region: string;
  access_key_id?: string;
  secret_access_key?: string;
  session_token?: string;
}

export interface AiProxyConfig {
  targets: AiTargetConfig[];
  client_format: 'auto' | 'openai' | 'anthropic';
  pass_client_key: boolean;
  timeout_ms: number;
  ssl_verify: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;

const targetSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'provider'],
  properties: {
    name: { type: 'string', minLength: 1, description: 'Names the target in traces, metrics and logs.' },
    provider: { type: 'string', enum: [...PROVIDERS], description: 'The API the target speaks.' },
    endpoint: {
      type: 'string',
      minLength: 1,
      description:
        "Base URL scheme://host[:port][/prefix]; the provider's own path is appended. Required for azure-openai and openai-compatible.",
    },
    model: {
      type: 'string',
      minLength: 1,
      description: "Model called (Azure: the deployment); the client's model when absent.",
    },
    api_key: {
      type: 'string',
      minLength: 1,
      description: 'Sent as the provider wants it; masked in the Admin API, never logged or traced.',
    },
    priority: { type: 'integer', default: 0, description: 'Higher is tried first.' },
    weight: {
      type: 'integer',
      minimum: 0,
      default: 1,
      description: 'Share within one priority; 0 drains the target.',
    },
    timeout_ms: {
      type: 'integer',
      minimum: 1,
      description:
        "Deadline of one call (connect to the whole answer; to the headers when streaming, then the longest silence between events). Default: the node's timeout_ms.",
    },
    default_max_tokens: {
      type: 'integer',
      minimum: 1,
      default: DEFAULT_MAX_TOKENS,
      description: 'anthropic: max_tokens of a request that names none.',
    },
    api_version: {
      type: 'string',
      minLength: 1,
      description: `azure-openai: the api-version query. Default ${DEFAULT_AZURE_API_VERSION}.`,
    },
    aws: {
      type: 'object',
      additionalProperties: false,
      required: ['region'],
      description:
        'bedrock: the region, and the credentials SigV4 signs with (default: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN of the environment).',
      properties: {
        region: { type: 'string', minLength: 1, pattern: '^[a-z0-9-]+$', description: 'e.g. us-east-1.' },
        access_key_id: { type: 'string', minLength: 1 },
        secret_access_key: { type: 'string', minLength: 1, description: 'Masked; never logged or traced.' },
        session_token: { type: 'string', minLength: 1, description: 'Temporary credentials: their token.' },
      },
    },
  },
} as const;

const AWS_HEADER_NAMES = { date: 'x-amz-date', securityToken: 'x-amz-security-token' } as const;

/** The SigV4 signer of a bedrock target without an api_key; a ConfigError when it has no credentials. */
function bedrockSigner(t: AiTargetConfig, at: string): SigV4Signer | undefined {
  if (t.provider !== 'bedrock') return undefined;
  const aws = t.aws;
  if (aws === undefined) throw new ConfigError(`${at}.aws`, 'is required for bedrock (at least its region)');
  if ((aws.access_key_id === undefined) !== (aws.secret_access_key === undefined))
    throw new ConfigError(`${at}.aws`, 'access_key_id and secret_access_key go together');
  if (t.api_key !== undefined) {
    if (aws.access_key_id !== undefined)
      throw new ConfigError(`${at}.api_key`, 'a bedrock target has an api_key or aws keys, not both');
    return undefined; // a Bedrock API key, sent as a bearer token
  }
  const env = process.env;
  const accessKey = aws.access_key_id ?? env['AWS_ACCESS_KEY_ID'];
  const secretKey = aws.secret_access_key ?? env['AWS_SECRET_ACCESS_KEY'];
  if (!accessKey || !secretKey)
    throw new ConfigError(
      `${at}.aws`,
      'bedrock needs credentials: aws.access_key_id and aws.secret_access_key, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, or an api_key',
    );
  const sessionToken =
    aws.access_key_id !== undefined
      ? aws.session_token
      : (aws.session_token ?? (env['AWS_SESSION_TOKEN'] || undefined));
  return new SigV4Signer({
    headerNames: AWS_HEADER_NAMES,
    accessKey,
    secretKey,
    sessionToken,
    region: aws.region,
    service: 'bedrock',
  });
}

/** Calls one of several LLM providers, translating between the client's API and the provider's. */
export const aiProxy = definePlugin({
  type: 'ai-proxy',
  category: 'ai',
  description:
    'Call an LLM provider (OpenAI, Azure OpenAI, Anthropic, Gemini, Amazon Bedrock, Mistral, OpenAI-compatible) for an OpenAI Chat Completions or Anthropic Messages request, translating formats and streams, with fallback across targets by priority and weight.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['targets'],
    properties: {
      targets: {
        type: 'array',
        minItems: 1,
        items: targetSchema,
        description: 'Providers to call, in fallback order.',
      },
      client_format: {
        type: 'string',
        enum: ['auto', 'openai', 'anthropic'],
        default: 'auto',
        description:
          'auto: by path (…/chat/completions is OpenAI, …/messages is Anthropic, …/embeddings OpenAI embeddings).',
      },
      pass_client_key: {
        type: 'boolean',
        default: false,
        description:
          "Forward the client's own API key to the provider (in the provider's header) instead of the target's api_key.",
      },
      timeout_ms: {
        type: 'integer',
        minimum: 1,
        default: DEFAULT_TIMEOUT_MS,
        description: 'Deadline of one call for targets without their own timeout_ms.',
      },
      ssl_verify: { type: 'boolean', default: true, description: "Verify https endpoints' certificates." },
    },
  },
  outputs: {
    success: {
      kind: 'success',
      description:
        "A provider answered: ctx.response holds the answer in the client's format (a provider's 4xx other than 429 too).",
    },
  },
  // Streams the answer unless a node after it reads the response body (docs/configuration.md#streaming).
  relaysResponse: true,
  readsResponseBody: () => false,
  create(config: AiProxyConfig, env: PluginEnv): AiProxyNode {
    const tls = loadTlsMaterial({ verify: config.ssl_verify });
    const seen = new Set<string>();
    const targets: AiTarget[] = [];
    const leases: { release(): void }[] = [];
    try {
      config.targets.forEach((t, i) => {
        const at = `targets[${i}]`;
        if (seen.has(t.name)) throw new ConfigError(`${at}.name`, `'${t.name}' names two targets`);
        seen.add(t.name);
        const spec = PROVIDER_SPECS[t.provider];
        const signer = bedrockSigner(t, at);
        if (t.aws !== undefined && t.provider !== 'bedrock')
          env.warn(`${at}.aws`, `ignored: provider is ${t.provider}`);
        const text =
          t.endpoint ??
          (t.provider === 'bedrock' && t.aws !== undefined
            ? `https://bedrock-runtime.${t.aws.region}.amazonaws.com`
            : spec.defaultEndpoint);
        if (text === undefined)
          throw new ConfigError(`${at}.endpoint`, `is required for provider ${t.provider}`);
        const url = parseEndpoint(text, `${at}.endpoint`);
        if (t.provider === 'azure-openai' && t.model === undefined)
          throw new ConfigError(`${at}.model`, 'is required for azure-openai (the deployment name)');
        if (t.api_version !== undefined && t.provider !== 'azure-openai')
          env.warn(`${at}.api_version`, `ignored: provider is ${t.provider}`);
        const timeoutMs = t.timeout_ms ?? config.timeout_ms;
        const lease = acquirePool({
          origin: url.origin,
          tls: url.protocol === 'https:' ? tls : null,
          connectTimeoutMs: timeoutMs,
        });
        leases.push(lease);
        targets.push({
          name: t.name,
          provider: t.provider,
          spec,
          origin: url.origin,
          authority: url.host,
          prefix: url.pathname.replace(/\/+$/, ''),
          pool: lease.pool,
          model: t.model,
          apiKey: t.api_key,
          priority: t.priority,
          weight: t.weight,
          timeoutMs,
          defaultMaxTokens: t.default_max_tokens,
          apiVersion: t.api_version ?? DEFAULT_AZURE_API_VERSION,
          signer,
        });
      });
    } catch (err) {
      for (const lease of leases) lease.release();
      throw err;
    }
    if (targets.every((t) => t.weight === 0)) {
      for (const lease of leases) lease.release();
      throw new ConfigError('targets', 'every target has weight 0');
    }
    return new AiProxyNode({
      targets,
      clientFormat: config.client_format,
      passClientKey: config.pass_client_key,
      streaming: env.streaming,
      metrics: aiMetrics(env.scope),
      where: { policy: env.policy, node: env.nodeId },
      logger: env.logger,
      release: () => {
        for (const lease of leases) lease.release();
      },
    });
  },
});

function parseEndpoint(text: string, key: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(key, `'${text}' is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(key, 'must be http or https');
  if (url.username !== '' || url.password !== '')
    throw new ConfigError(key, 'must not carry credentials; use api_key');
  if (url.search !== '' || url.hash !== '') throw new ConfigError(key, 'must not carry a query or fragment');
  return url;
}
