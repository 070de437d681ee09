import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Context } from '../../core/context.js';
import { ConfigError, definePlugin, READS_FILE } from '../../core/plugin.js';
import { entryBuilder, formatReadsBody, latencyMs, type EntryConfig, type LogEntry } from './shared/entry.js';
import {
  batchProperties,
  batchSettings,
  entryProperties,
  logNode,
  loggerSchema,
  successOnly,
  type BatchConfig,
} from './shared/logger-node.js';
import { HttpEndpoint } from './shared/transport.js';
import { calloutTlsSchema, type CalloutTlsConfig } from '../callout-tls.js';

interface AuthConfig {
  client_email: string;
  private_key: string;
  project_id: string;
  token_uri?: string;
  entries_uri?: string;
  scope?: string[];
  scopes?: string[];
}

interface GoogleCloudLoggingConfig extends EntryConfig, BatchConfig {
  auth_config?: AuthConfig;
  auth_file?: string;
  resource: Record<string, unknown>;
  log_id: string;
  ssl_verify: boolean;
  tls?: CalloutTlsConfig;
  timeout: number;
}

const TOKEN_URI = 'https://oauth2.googleapis.com/token';
const ENTRIES_URI = 'https://logging.googleapis.com/v2/entries:write';
const SCOPES = ['https://www.googleapis.com/auth/logging.write'];
/** A token is renewed this long before Google says it expires. */
const RENEW_EARLY_MS = 60_000;

/**
 * Writes entries with the Cloud Logging `entries:write` API. The service
 * account signs an RS256 JWT for the OAuth2 JWT-bearer grant; the access
 * token is cached until shortly before it expires.
 */
export const googleCloudLogging = definePlugin({
  type: 'google-cloud-logging',
  category: 'observability',
  description:
    'Write access-log entries to Google Cloud Logging (entries:write, service-account OAuth), in batches.',
  schema: loggerSchema({
    auth_config: {
      type: 'object',
      additionalProperties: false,
      required: ['client_email', 'private_key', 'project_id'],
      properties: {
        client_email: { type: 'string', minLength: 1 },
        private_key: { type: 'string', minLength: 1, description: 'PEM private key of the service account.' },
        project_id: { type: 'string', minLength: 1 },
        token_uri: { type: 'string', minLength: 1, default: TOKEN_URI },
        entries_uri: { type: 'string', minLength: 1, default: ENTRIES_URI },
        scope: { type: 'array', items: { type: 'string' }, minItems: 1 },
        scopes: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'Alias of `scope`.' },
      },
    },
    auth_file: {
      type: 'string',
      minLength: 1,
      [READS_FILE]: true,
      description: 'Service-account JSON file; relative to gateway.yaml.',
    },
    resource: {
      type: 'object',
      default: { type: 'global' },
      description: 'MonitoredResource of every entry.',
    },
    log_id: { type: 'string', minLength: 1, default: 'featherbit%2Flogs' },
    ssl_verify: { type: 'boolean', default: true },
    tls: calloutTlsSchema,
    timeout: { type: 'number', exclusiveMinimum: 0, default: 10, description: 'Seconds per call.' },
    ...entryProperties,
    ...batchProperties(),
  }),
  outputs: successOnly,
  templated: ['log_format'],
  readsResponseBody: (config: GoogleCloudLoggingConfig) => formatReadsBody(config),
  create(config: GoogleCloudLoggingConfig, env) {
    const account = credentials(config, env.configDir);
    let key: KeyObject;
    try {
      key = createPrivateKey(account.private_key);
    } catch (err) {
      throw new ConfigError(
        `${account.from}.private_key`,
        `not a PEM private key: ${(err as Error).message}`,
      );
    }
    const options = { sslVerify: config.ssl_verify, tls: config.tls, timeoutMs: config.timeout * 1000 };
    const tokenEndpoint = new HttpEndpoint(
      account.token_uri ?? TOKEN_URI,
      `${account.from}.token_uri`,
      options,
    );
    const entriesEndpoint = new HttpEndpoint(
      account.entries_uri ?? ENTRIES_URI,
      `${account.from}.entries_uri`,
      options,
    );
    const tokens = new TokenSource(account, key, tokenEndpoint);
    const logName = `projects/${account.project_id}/logs/${config.log_id}`;
    const build = entryBuilder(config, env);
    const formatted = config.log_format !== undefined;
    return logNode<LogEntry>(env, batchSettings(config), {
      encode: (ctx) => ({
        logName,
        resource: config.resource,
        timestamp: new Date().toISOString(),
        jsonPayload: build(ctx),
        ...(formatted ? {} : { httpRequest: httpRequest(ctx) }),
      }),
      ship: async (entries) => {
        const token = await tokens.get();
        await entriesEndpoint.send({
          headers: ['content-type', 'application/json', 'authorization', `Bearer ${token}`],
          body: JSON.stringify({ entries, partialSuccess: false }),
        });
      },
      release: () => {
        tokenEndpoint.release();
        entriesEndpoint.release();
      },
    });
  },
});

type Account = AuthConfig & { from: string };

function credentials(config: GoogleCloudLoggingConfig, configDir: string | undefined): Account {
  if (config.auth_config !== undefined) return { ...config.auth_config, from: 'auth_config' };
  if (config.auth_file === undefined) throw new ConfigError('auth_config', 'set auth_config or auth_file');
  const path = resolve(configDir ?? process.cwd(), config.auth_file);
  let parsed: Partial<AuthConfig>;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<AuthConfig>;
  } catch (err) {
    throw new ConfigError('auth_file', `cannot read ${path}: ${(err as Error).message}`);
  }
  for (const field of ['client_email', 'private_key', 'project_id'] as const) {
    if (typeof parsed[field] !== 'string' || parsed[field] === '') {
      throw new ConfigError('auth_file', `${path} has no ${field}`);
    }
  }
  return { ...(parsed as AuthConfig), from: 'auth_file' };
}

/** Cloud Logging's HttpRequest record, from the request as it stands when logged. */
function httpRequest(ctx: Context): Record<string, unknown> {
  const req = ctx.request;
  return {
    requestMethod: req.method,
    requestUrl: `${req.scheme}://${req.host}${req.url}`,
    status: ctx.response.status,
    remoteIp: req.remoteAddress,
    userAgent: req.header('user-agent') ?? '',
    latency: `${(latencyMs(ctx) / 1000).toFixed(6)}s`,
  };
}

/** One access token at a time, fetched on demand, shared by concurrent shipments. */
class TokenSource {
  #token: { value: string; renewAt: number } | null = null;
  #pending: Promise<string> | null = null;

  constructor(
    private readonly account: Account,
    private readonly key: KeyObject,
    private readonly endpoint: HttpEndpoint,
  ) {}

  get(): Promise<string> {
    if (this.#token !== null && Date.now() < this.#token.renewAt) return Promise.resolve(this.#token.value);
    this.#pending ??= this.#fetch().finally(() => {
      this.#pending = null;
    });
    return this.#pending;
  }

  async #fetch(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: this.account.client_email,
      scope: (this.account.scope ?? this.account.scopes ?? SCOPES).join(' '),
      aud: this.endpoint.url.href,
      iat: now,
      exp: now + 3600,
    };
    const unsigned = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
    const signature = sign('RSA-SHA256', Buffer.from(unsigned), this.key).toString('base64url');
    const form = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: `${unsigned}.${signature}`,
    });
    const answer = await this.endpoint.send({
      headers: ['content-type', 'application/x-www-form-urlencoded'],
      body: form.toString(),
    });
    const parsed = JSON.parse(answer.body.toString('utf8')) as {
      access_token?: unknown;
      expires_in?: unknown;
    };
    if (typeof parsed.access_token !== 'string')
      throw new Error('token endpoint answered without access_token');
    const lifetime = typeof parsed.expires_in === 'number' ? parsed.expires_in * 1000 : 3_600_000;
    this.#token = { value: parsed.access_token, renewAt: Date.now() + lifetime - RENEW_EARLY_MS };
    return parsed.access_token;
  }
}

function b64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}
