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
/** The metadata server of GCE, GKE (workload identity), Cloud Run; GCE_METADATA_HOST overrides it. */
const METADATA_HOST = 'metadata.google.internal';
const METADATA_FLAVOR = { 'metadata-flavor': 'Google' } as const;

interface ServiceAccountKey {
  file: string;
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
 * `GCE_METADATA_HOST` as Google's client libraries read it: a host, optionally with a port
 * (`127.0.0.1:8080`), or a URL with its scheme; unset, `metadata.google.internal`.
 */
export function metadataBase(env: NodeJS.ProcessEnv): URL {
  const host = env['GCE_METADATA_HOST']?.trim() || METADATA_HOST;
  const origin = /^https?:\/\//i.test(host) ? host : `http://${host}`;
  return new URL('/computeMetadata/v1/', origin);
}

/**
 * Google Cloud Secret Manager (docs/secrets.md#gcp): `${secret:gcp:SECRET#FIELD}` is
 * `payload.data` (base64) of `GET /v1/projects/<project>/secrets/SECRET/versions/latest:access`,
 * or a JSON key of it. Authenticates with a service-account JSON key: a JWT signed with its
 * private key (RS256) is exchanged at its `token_uri` for an OAuth access token
 * (`urn:ietf:params:oauth:grant-type:jwt-bearer`), kept until 5 minutes before it expires.
 * Without a key file it asks the metadata server (GKE workload identity, a GCE VM's service
 * account): `GET /computeMetadata/v1/instance/service-accounts/default/token` with
 * `Metadata-Flavor: Google`, the project from `project/project-id` unless `project` is set.
 */
export class GcpSecretManager implements SecretManager {
  readonly type = 'gcp';
  readonly refreshMs: number;
  readonly #config: GcpManagerConfig;
  /** The service-account key, or undefined: the metadata server's credentials. */
  readonly #keyFile: string | undefined;
  readonly #metadata: URL;
  /** The metadata server's project id, once read. */
  #metadataProject: string | undefined;
  readonly #endpoint: URL;
  #token: AccessToken | undefined;
  /** One token request at a time: the loads of a round share it. */
  #fetching: Promise<AccessToken> | undefined;

  constructor(config: GcpManagerConfig, env: NodeJS.ProcessEnv) {
    this.#config = config;
    this.refreshMs = config.refresh_s * 1000;
    const keyFile = config.credentials_file ?? env['GOOGLE_APPLICATION_CREDENTIALS'];
    this.#keyFile = keyFile === '' ? undefined : keyFile;
    this.#metadata = metadataBase(env);
    const endpoint = config.endpoint ?? DEFAULT_ENDPOINT;
    this.#endpoint = new URL(endpoint.endsWith('/') ? endpoint : `${endpoint}/`);
  }

  async load(path: string): Promise<string> {
    const key = this.#keyFile === undefined ? undefined : await this.#readKey(this.#keyFile);
    const project =
      this.#config.project ??
      (key === undefined
        ? path.startsWith('projects/')
          ? undefined
          : await this.#projectFromMetadata()
        : key.projectId);
    const name = versionName(path, project);
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

  async #accessToken(key: ServiceAccountKey | undefined): Promise<AccessToken> {
    const held = this.#token;
    if (held !== undefined && Date.now() < held.refreshAt) return held;
    this.#fetching ??= (key === undefined ? this.#fromMetadata() : this.#exchange(key)).finally(() => {
      this.#fetching = undefined;
    });
    return this.#fetching;
  }

  /** One metadata-server read; an answer without `Metadata-Flavor: Google` is not the metadata server. */
  async #metadataGet(path: string, what: string): Promise<string> {
    const url = new URL(path, this.#metadata);
    const answer = await httpCall(
      url,
      { method: 'GET', headers: { ...METADATA_FLAVOR }, timeoutMs: this.#config.timeout_ms },
      `gcp: no credentials_file or GOOGLE_APPLICATION_CREDENTIALS, and the metadata server ${url.origin} (${what}) did not answer`,
    );
    const prefix = `gcp: metadata server ${url.origin} (${what})`;
    if (answer.headers['metadata-flavor'] !== 'Google')
      throw new SecretError(`${prefix}: the answer has no Metadata-Flavor: Google header`);
    if (answer.status !== 200)
      throw new SecretError(`${prefix}: ${answer.status} ${answer.body.trim().slice(0, 200)}`);
    return answer.body;
  }

  /** The project the metadata server's workload runs in. */
  async #projectFromMetadata(): Promise<string> {
    this.#metadataProject ??= (await this.#metadataGet('project/project-id', 'project id')).trim();
    return this.#metadataProject;
  }

  /** The default service account's access token (on GKE, the workload identity's). */
  async #fromMetadata(): Promise<AccessToken> {
    const body = await this.#metadataGet('instance/service-accounts/default/token', 'token');
    const token = jsonOf(body) as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (typeof token?.access_token !== 'string')
      throw new SecretError('gcp: metadata server token: no access_token in the answer');
    return this.#keep(token.access_token, token.expires_in);
  }

  /** Kept until 5 minutes before it expires; a short-lived one for a third of its life. */
  #keep(accessToken: string, expiresInS: unknown): AccessToken {
    const expiresIn = typeof expiresInS === 'number' ? expiresInS * 1000 : ASSERTION_S * 1000;
    const state = {
      token: accessToken,
      refreshAt: Date.now() + Math.max(expiresIn - EXPIRY_MARGIN_MS, expiresIn / 3),
    };
    this.#token = state;
    return state;
  }

  /** A signed JWT for an access token at the key's token_uri (RFC 7523). */
  async #exchange(key: ServiceAccountKey): Promise<AccessToken> {
    const signing = await importPKCS8(key.privateKey, 'RS256').catch(() => {
      // Not the library's message: it may quote the key.
      throw new SecretError(`gcp: ${key.file}: private_key is not a PKCS#8 RSA key`);
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
    return this.#keep(token.access_token, token.expires_in);
  }

  /** The key file, read on each use: a mounted key that is replaced is picked up. */
  async #readKey(file: string): Promise<ServiceAccountKey> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new SecretError(`gcp: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const key = jsonOf(text) as Record<string, unknown> | undefined;
    if (key === undefined || key === null || typeof key !== 'object')
      throw new SecretError(`gcp: ${file} is not JSON (a service-account key)`);
    const { type, client_email, private_key, private_key_id, token_uri, project_id } = key;
    if (type !== 'service_account') throw new SecretError(`gcp: ${file}: type is not service_account`);
    if (typeof client_email !== 'string' || typeof private_key !== 'string')
      throw new SecretError(`gcp: ${file}: client_email or private_key missing`);
    return {
      file,
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
