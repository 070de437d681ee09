import { SigV4Signer } from '../../signing/sigv4.js';
import { httpCall, jsonOf, type HttpAnswer } from './http.js';
import { SecretError, type SecretManager } from './manager.js';
import type { AwsManagerConfig } from './schema.js';

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string | undefined;
  /** When to fetch them again (temporary credentials); undefined for static ones. */
  refreshAt: number | undefined;
}

const HEADER_NAMES = { date: 'x-amz-date', securityToken: 'x-amz-security-token' } as const;
/** Temporary credentials are fetched again this long before they expire. */
const EXPIRY_MARGIN_MS = 5 * 60 * 1000;
const CONTAINER_HOST = 'http://169.254.170.2';
const IMDS_HOST = 'http://169.254.169.254';

/**
 * AWS Secrets Manager (docs/secrets.md#aws): `${secret:aws:SECRET_ID#FIELD}` is a JSON key of the
 * SecretString returned by `GetSecretValue` (JSON 1.1 protocol, `X-Amz-Target:
 * secretsmanager.GetSecretValue`), signed with SigV4 (src/signing/sigv4.ts). Credentials: the
 * configured keys, else the standard chain: environment, container credentials
 * (`AWS_CONTAINER_CREDENTIALS_FULL_URI` + `AWS_CONTAINER_AUTHORIZATION_TOKEN`, or the relative
 * URI), then instance metadata (IMDSv2) unless `AWS_EC2_METADATA_DISABLED=true`.
 */
export class AwsSecretManager implements SecretManager {
  readonly type = 'aws';
  readonly refreshMs: number;
  readonly #config: AwsManagerConfig;
  readonly #env: NodeJS.ProcessEnv;
  readonly #endpoint: URL;
  #credentials: Credentials | undefined;

  constructor(config: AwsManagerConfig, env: NodeJS.ProcessEnv) {
    this.#config = config;
    this.#env = env;
    this.refreshMs = config.refresh_s * 1000;
    this.#endpoint = new URL(config.endpoint ?? `https://secretsmanager.${config.region}.amazonaws.com/`);
    if ((config.access_key_id === undefined) !== (config.secret_access_key === undefined))
      throw new SecretError('secrets.aws: access_key_id and secret_access_key go together');
  }

  async load(secretId: string): Promise<string> {
    const credentials = await this.#credentialsNow();
    const body = JSON.stringify({ SecretId: secretId });
    const host = this.#endpoint.host;
    const headers: [string, string][] = [
      ['host', host],
      ['content-type', 'application/x-amz-json-1.1'],
      ['x-amz-target', 'secretsmanager.GetSecretValue'],
    ];
    const signer = new SigV4Signer({
      headerNames: HEADER_NAMES,
      accessKey: credentials.accessKeyId,
      secretKey: credentials.secretAccessKey,
      sessionToken: credentials.sessionToken,
      region: this.#config.region,
      service: 'secretsmanager',
    });
    const path = this.#endpoint.pathname === '' ? '/' : this.#endpoint.pathname;
    const signed = signer.sign({ method: 'POST', path, query: [], headers, payload: body });
    const sent: Record<string, string> = Object.fromEntries(headers);
    for (let i = 0; i < signed.headers.length; i += 2)
      sent[signed.headers[i] as string] = signed.headers[i + 1] as string;
    const answer = await httpCall(
      this.#endpoint,
      { method: 'POST', headers: sent, body, timeoutMs: this.#config.timeout_ms },
      'aws',
    );
    if (answer.status !== 200) {
      // Temporary credentials refused (expired early, rotated): fetch them again on the next read.
      if (answer.status === 403 && credentials.refreshAt !== undefined) this.#credentials = undefined;
      throw new SecretError(`aws: GetSecretValue ${secretId}: ${awsError(answer)}`);
    }
    const value = jsonOf(answer.body) as { SecretString?: unknown; SecretBinary?: unknown } | undefined;
    if (typeof value?.SecretString === 'string') return value.SecretString;
    if (typeof value?.SecretBinary === 'string')
      return Buffer.from(value.SecretBinary, 'base64').toString('utf8');
    throw new SecretError(`aws: GetSecretValue ${secretId}: no SecretString in the answer`);
  }

  async #credentialsNow(): Promise<Credentials> {
    const held = this.#credentials;
    if (held !== undefined && (held.refreshAt === undefined || Date.now() < held.refreshAt)) return held;
    this.#credentials = await this.#resolveCredentials();
    return this.#credentials;
  }

  async #resolveCredentials(): Promise<Credentials> {
    const c = this.#config;
    if (c.access_key_id !== undefined && c.secret_access_key !== undefined)
      return {
        accessKeyId: c.access_key_id,
        secretAccessKey: c.secret_access_key,
        sessionToken: c.session_token,
        refreshAt: undefined,
      };
    const env = this.#env;
    if (env['AWS_ACCESS_KEY_ID'] && env['AWS_SECRET_ACCESS_KEY'])
      return {
        accessKeyId: env['AWS_ACCESS_KEY_ID'],
        secretAccessKey: env['AWS_SECRET_ACCESS_KEY'],
        sessionToken: env['AWS_SESSION_TOKEN'] || undefined,
        refreshAt: undefined,
      };
    const full = env['AWS_CONTAINER_CREDENTIALS_FULL_URI'];
    const relative = env['AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'];
    if (full || relative) {
      const url = new URL(full || `${CONTAINER_HOST}${relative}`);
      const headers: Record<string, string> = { accept: 'application/json' };
      const token = env['AWS_CONTAINER_AUTHORIZATION_TOKEN'];
      if (token) headers['authorization'] = token;
      const answer = await httpCall(
        url,
        { method: 'GET', headers, timeoutMs: this.#config.timeout_ms },
        'aws container credentials',
      );
      if (answer.status !== 200) throw new SecretError(`aws: container credentials: ${answer.status}`);
      return temporary(answer, 'container credentials');
    }
    if ((env['AWS_EC2_METADATA_DISABLED'] ?? '').toLowerCase() === 'true')
      throw new SecretError('aws: no credentials (keys, environment, container; instance metadata disabled)');
    const base = env['AWS_EC2_METADATA_SERVICE_ENDPOINT'] || IMDS_HOST;
    const timeoutMs = Math.min(this.#config.timeout_ms, 2000);
    const session = await httpCall(
      new URL('/latest/api/token', base),
      { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '21600' }, timeoutMs },
      'aws instance metadata',
    );
    if (session.status !== 200) throw new SecretError(`aws: instance metadata token: ${session.status}`);
    const headers = { 'x-aws-ec2-metadata-token': session.body.trim() };
    const roles = await httpCall(
      new URL('/latest/meta-data/iam/security-credentials/', base),
      { method: 'GET', headers, timeoutMs },
      'aws instance metadata',
    );
    const role = roles.body.split('\n')[0]?.trim();
    if (roles.status !== 200 || !role) throw new SecretError('aws: instance metadata: no IAM role');
    const answer = await httpCall(
      new URL(`/latest/meta-data/iam/security-credentials/${encodeURIComponent(role)}`, base),
      { method: 'GET', headers, timeoutMs },
      'aws instance metadata',
    );
    if (answer.status !== 200) throw new SecretError(`aws: instance metadata credentials: ${answer.status}`);
    return temporary(answer, 'instance metadata');
  }

  close(): void {
    this.#credentials = undefined;
  }
}

function temporary(answer: HttpAnswer, what: string): Credentials {
  const body = jsonOf(answer.body) as
    { AccessKeyId?: unknown; SecretAccessKey?: unknown; Token?: unknown; Expiration?: unknown } | undefined;
  if (typeof body?.AccessKeyId !== 'string' || typeof body.SecretAccessKey !== 'string')
    throw new SecretError(`aws: ${what}: no AccessKeyId/SecretAccessKey in the answer`);
  const expires = typeof body.Expiration === 'string' ? Date.parse(body.Expiration) : NaN;
  return {
    accessKeyId: body.AccessKeyId,
    secretAccessKey: body.SecretAccessKey,
    sessionToken: typeof body.Token === 'string' ? body.Token : undefined,
    refreshAt: Number.isFinite(expires) ? expires - EXPIRY_MARGIN_MS : Date.now() + EXPIRY_MARGIN_MS,
  };
}

/** `__type` and `message` of a JSON 1.1 error (`x-amzn-ErrorType` when the body has none). */
function awsError(answer: HttpAnswer): string {
  const body = jsonOf(answer.body) as { __type?: unknown; message?: unknown; Message?: unknown } | undefined;
  const header = answer.headers['x-amzn-errortype'];
  const type = typeof body?.__type === 'string' ? body.__type : typeof header === 'string' ? header : '';
  const message =
    typeof body?.message === 'string' ? body.message : typeof body?.Message === 'string' ? body.Message : '';
  return `${answer.status} ${type.replace(/^.*#/, '').split(':')[0]}${message === '' ? '' : `: ${message.slice(0, 200)}`}`;
}
