import { readFile } from 'node:fs/promises';
import { SignJWT, importPKCS8 } from 'jose';
import { httpCall, jsonOf, type HttpAnswer } from './http.js';
import { SecretError, type SecretManager } from './manager.js';
import type { GcpManagerConfig } from './schema.js';

/** The scope Secret Manager's `versions.access` accepts. */
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const DEFAULT_ENDPOINT = 'https://secretmanager.googleapis.com';
/** The assertion's lifetime: Google accepts at most one hour. */
const ASSERTION_S = 3600;
/** An access token is fetched again this long before it expires. */
const EXPIRY_MARGIN_MS = 5 * 60 * 1000;

interface ServiceAccountKey {
  clientEmail: string;
  privateKey: string;
  privateKeyId: string | undefined;
  tokenUri: string;
  projectId: string | undefined;
}

interface AccessToken {
  token: string;
  refreshAt: number;
}

/**
 * Google Cloud Secret Manager (docs/secrets.md#gcp): `${secret:gcp:SECRET#FIELD}` is
 * `payload.data` (base64) of `GET /v1/projects/<project>/secrets/SECRET/versions/latest:access`,
 * or a JSON key of it. Authenticates with a service-account JSON key: a JWT signed with its
 * private key (RS256) is exchanged at its `token_uri` for an OAuth access token
 * (`urn:ietf:params:oauth:grant-type:jwt-bearer`), kept until 5 minutes before it expires.
 */
export class GcpSecretManager implements SecretManager {
  readonly type = 'gcp';
  readonly refreshMs: number;
  readonly #config: GcpManagerConfig;
  readonly #keyFile: string;
  readonly #endpoint: URL;
  #token: AccessToken | undefined;
  /** One token request at a time: the loads of a round share it. */
  #fetching: Promise<AccessToken> | undefined;

  constructor(config: GcpManagerConfig, env: NodeJS.ProcessEnv) {
    this.#config = config;
    this.refreshMs = config.refresh_s * 1000;
    const keyFile = config.credentials_file ?? env['GOOGLE_APPLICATION_CREDENTIALS'];
    if (keyFile === undefined || keyFile === '')
      throw new SecretError(
        'secrets.gcp needs credentials_file (a service-account JSON key) or GOOGLE_APPLICATION_CREDENTIALS',
      );
    this.#keyFile = keyFile;
    const endpoint = config.endpoint ?? DEFAULT_ENDPOINT;
    this.#endpoint = new URL(endpoint.endsWith('/') ? endpoint : `${endpoint}/`);
  }

  async load(path: string): Promise<string> {
    const key = await this.#readKey();
    const name = versionName(path, this.#config.project ?? key.projectId);
    let token = await this.#accessToken(key);
    let answer = await this.#access(name, token.token);
    if (answer.status === 401) {
      // The token was revoked or expired early: fetch another, once.
      this.#token = undefined;
      token = await this.#accessToken(key);
      answer = await this.#access(name, token.token);
    }
    if (answer.status !== 200) throw new SecretError(`gcp: ${name}: ${googleError(answer)}`);
    const data = (jsonOf(answer.body) as { payload?: { data?: unknown } } | undefined)?.payload?.data;
    if (typeof data !== 'string') throw new SecretError(`gcp: ${name}: no payload.data in the answer`);
    return Buffer.from(data, 'base64').toString('utf8');
  }

  #access(name: string, token: string): Promise<HttpAnswer> {
    return httpCall(
      new URL(`v1/${name}:access`, this.#endpoint),
      {
        method: 'GET',
        headers: { accept: 'application/json', authorization: `Bearer ${token}` },
        timeoutMs: this.#config.timeout_ms,
      },
      'gcp',
    );
  }

  async #accessToken(key: ServiceAccountKey): Promise<AccessToken> {
    const held = this.#token;
    if (held !== undefined && Date.now() < held.refreshAt) return held;
    this.#fetching ??= this.#exchange(key).finally(() => {
      this.#fetching = undefined;
    });
    return this.#fetching;
  }

  /** A signed JWT for an access token at the key's token_uri (RFC 7523). */
  async #exchange(key: ServiceAccountKey): Promise<AccessToken> {
    const signing = await importPKCS8(key.privateKey, 'RS256').catch(() => {
      // Not the library's message: it may quote the key.
      throw new SecretError(`gcp: ${this.#keyFile}: private_key is not a PKCS#8 RSA key`);
    });
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({
        alg: 'RS256',
        typ: 'JWT',
        ...(key.privateKeyId === undefined ? {} : { kid: key.privateKeyId }),
      })
      .setIssuer(key.clientEmail)
      .setAudience(key.tokenUri)
      .setIssuedAt(now)
      .setExpirationTime(now + ASSERTION_S)
      .sign(signing);
    const body = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion,
    }).toString();
    const answer = await httpCall(
      new URL(key.tokenUri),
      {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body,
        timeoutMs: this.#config.timeout_ms,
      },
      'gcp token',
    );
    if (answer.status !== 200) throw new SecretError(`gcp: token request refused: ${oauthError(answer)}`);
    const token = jsonOf(answer.body) as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (typeof token?.access_token !== 'string')
      throw new SecretError('gcp: token request: no access_token in the answer');
    const expiresIn = typeof token.expires_in === 'number' ? token.expires_in * 1000 : ASSERTION_S * 1000;
    const state = {
      token: token.access_token,
      // A short-lived token is used for a third of its life rather than refused.
      refreshAt: Date.now() + Math.max(expiresIn - EXPIRY_MARGIN_MS, expiresIn / 3),
    };
    this.#token = state;
    return state;
  }

  /** The key file, read on each use: a mounted key that is replaced is picked up. */
  async #readKey(): Promise<ServiceAccountKey> {
    let text: string;
    try {
      text = await readFile(this.#keyFile, 'utf8');
    } catch (err) {
      throw new SecretError(
        `gcp: cannot read ${this.#keyFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
    const key = jsonOf(text) as Record<string, unknown> | undefined;
    if (key === undefined || key === null || typeof key !== 'object')
      throw new SecretError(`gcp: ${this.#keyFile} is not JSON (a service-account key)`);
    const { type, client_email, private_key, private_key_id, token_uri, project_id } = key;
    if (type !== 'service_account')
      throw new SecretError(`gcp: ${this.#keyFile}: type is not service_account`);
    if (typeof client_email !== 'string' || typeof private_key !== 'string')
      throw new SecretError(`gcp: ${this.#keyFile}: client_email or private_key missing`);
    return {
      clientEmail: client_email,
      privateKey: private_key,
      privateKeyId: typeof private_key_id === 'string' ? private_key_id : undefined,
      tokenUri: typeof token_uri === 'string' && token_uri !== '' ? token_uri : DEFAULT_TOKEN_URI,
      projectId: typeof project_id === 'string' ? project_id : undefined,
    };
  }

  close(): void {
    this.#token = undefined;
  }
}

/**
 * The version a reference names: `SECRET` (latest, in the project), `SECRET/versions/V`, or a
 * full `projects/P/secrets/SECRET[/versions/V]`.
 */
export function versionName(path: string, project: string | undefined): string {
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  let name: string;
  if (trimmed.startsWith('projects/')) name = trimmed;
  else {
    if (project === undefined)
      throw new SecretError(
        `gcp: ${path} names no project (set secrets.gcp.project or use projects/P/secrets/S)`,
      );
    name = `projects/${project}/secrets/${trimmed}`;
  }
  if (
    !/^projects\/[^/]+\/secrets\/[^/]+$/.test(name) &&
    !/^projects\/[^/]+\/secrets\/[^/]+\/versions\/[^/]+$/.test(name)
  )
    throw new SecretError(`gcp: ${path} is not SECRET, SECRET/versions/V or projects/P/secrets/SECRET`);
  return /\/versions\/[^/]+$/.test(name) ? name : `${name}/versions/latest`;
}

/** Google's `{"error": {code, status, message}}`. */
function googleError(answer: HttpAnswer): string {
  const error = (jsonOf(answer.body) as { error?: { status?: unknown; message?: unknown } } | undefined)
    ?.error;
  const status = typeof error?.status === 'string' ? ` ${error.status}` : '';
  const message = typeof error?.message === 'string' ? `: ${error.message.slice(0, 200)}` : '';
  return `${answer.status}${status}${message}`;
}

/** RFC 6749's `{"error", "error_description"}`. */
function oauthError(answer: HttpAnswer): string {
  const body = jsonOf(answer.body) as { error?: unknown; error_description?: unknown } | undefined;
  const error = typeof body?.error === 'string' ? ` ${body.error}` : '';
  const description =
    typeof body?.error_description === 'string' ? `: ${body.error_description.slice(0, 200)}` : '';
  return `${answer.status}${error}${description}`;
}
