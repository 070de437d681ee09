import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from '../../core/logger.js';
import { httpCall, jsonOf, type HttpAnswer } from './http.js';
import { SecretError, type SecretManager } from './manager.js';
import type { VaultManagerConfig } from './schema.js';

interface TokenState {
  token: string;
  /** When to renew (two thirds into the TTL); undefined for a token that does not expire. */
  renewAt: number | undefined;
  renewable: boolean;
}

/** Vault's `{"errors": [...]}`, joined; messages of Vault itself, never a value. */
function vaultErrors(answer: HttpAnswer): string {
  const body = jsonOf(answer.body) as { errors?: unknown } | undefined;
  const errors = Array.isArray(body?.errors) ? body.errors.filter((e) => typeof e === 'string') : [];
  return errors.length > 0 ? `${answer.status} ${errors.join('; ').slice(0, 200)}` : `${answer.status}`;
}

/**
 * HashiCorp Vault, KV version 2 (docs/secrets.md#vault): `${secret:vault:PATH#FIELD}` is
 * `data.data[FIELD]` of `GET /v1/<mount>/data/PATH`. Authenticates with `token`, AppRole
 * (`POST /v1/auth/<approle mount>/login`) or Kubernetes auth (`POST /v1/auth/<mount>/login` with
 * the service-account JWT of `token_path`); the token is renewed with `renew-self` two thirds into
 * its TTL (read with `lookup-self` for a configured token), and a login method logs in again only
 * when renewal fails or the token is refused.
 */
export class VaultSecretManager implements SecretManager {
  readonly type = 'vault';
  readonly refreshMs: number;
  readonly #config: VaultManagerConfig;
  readonly #logger: Logger;
  readonly #base: URL;
  readonly #ca: Buffer | undefined;
  #state: TokenState | undefined;
  /** One authentication at a time: the loads of a round share it. */
  #authenticating: Promise<TokenState> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(config: VaultManagerConfig, logger: Logger) {
    this.#config = config;
    this.#logger = logger;
    this.refreshMs = config.refresh_s * 1000;
    this.#base = new URL(config.address.endsWith('/') ? config.address : `${config.address}/`);
    this.#ca = config.tls.ca_file === undefined ? undefined : readFileSync(config.tls.ca_file);
    const methods = [config.token, config.approle, config.kubernetes].filter((m) => m !== undefined);
    if (methods.length !== 1)
      throw new SecretError('secrets.vault needs one of token, approle or kubernetes');
  }

  async load(path: string): Promise<Record<string, unknown>> {
    let state = await this.#token();
    let answer = await this.#call('GET', `v1/${this.#config.mount}/data/${encodePath(path)}`, state.token);
    if (answer.status === 403 && this.#config.token === undefined) {
      // The token was revoked or expired early: log in again, once.
      this.#state = undefined;
      state = await this.#token();
      answer = await this.#call('GET', `v1/${this.#config.mount}/data/${encodePath(path)}`, state.token);
    }
    if (answer.status === 404) throw new SecretError(`vault: no secret at ${this.#config.mount}/${path}`);
    if (answer.status !== 200)
      throw new SecretError(`vault: reading ${this.#config.mount}/${path}: ${vaultErrors(answer)}`);
    const body = jsonOf(answer.body) as { data?: { data?: unknown } } | undefined;
    const data = body?.data?.data;
    if (data === null || typeof data !== 'object' || Array.isArray(data))
      throw new SecretError(
        `vault: ${this.#config.mount}/${path} has no data (deleted version, or not a KV v2 mount)`,
      );
    return data as Record<string, unknown>;
  }

  /** The current token, authenticating or renewing first when due. */
  async #token(force = false): Promise<TokenState> {
    const state = this.#state;
    if (!force && state !== undefined && (state.renewAt === undefined || Date.now() < state.renewAt))
      return state;
    this.#authenticating ??= (state === undefined ? this.#authenticate() : this.#renew(state)).finally(() => {
      this.#authenticating = undefined;
    });
    return this.#authenticating;
  }

  async #authenticate(): Promise<TokenState> {
    const { approle, kubernetes } = this.#config;
    let state: TokenState;
    if (kubernetes !== undefined) {
      let jwt: string;
      try {
        // Read at each login: a projected service-account token is rotated by the kubelet.
        jwt = (await readFile(kubernetes.token_path, 'utf8')).trim();
      } catch (err) {
        throw new SecretError(
          `vault: cannot read kubernetes.token_path ${kubernetes.token_path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
        );
      }
      const answer = await this.#call(
        'POST',
        `v1/auth/${kubernetes.mount}/login`,
        undefined,
        JSON.stringify({ role: kubernetes.role, jwt }),
      );
      if (answer.status !== 200)
        throw new SecretError(`vault: kubernetes login refused: ${vaultErrors(answer)}`);
      state = this.#fromAuth(answer, 'kubernetes login');
    } else if (approle !== undefined) {
      const answer = await this.#call(
        'POST',
        `v1/auth/${approle.mount}/login`,
        undefined,
        JSON.stringify({ role_id: approle.role_id, secret_id: approle.secret_id }),
      );
      if (answer.status !== 200)
        throw new SecretError(`vault: approle login refused: ${vaultErrors(answer)}`);
      state = this.#fromAuth(answer, 'approle login');
    } else {
      const token = this.#config.token as string;
      const answer = await this.#call('GET', 'v1/auth/token/lookup-self', token);
      if (answer.status !== 200) throw new SecretError(`vault: token lookup refused: ${vaultErrors(answer)}`);
      const data = (jsonOf(answer.body) as { data?: { ttl?: unknown; renewable?: unknown } } | undefined)
        ?.data;
      const ttl = typeof data?.ttl === 'number' ? data.ttl : 0;
      state = { token, renewAt: renewAt(ttl), renewable: data?.renewable === true };
    }
    this.#install(state);
    return state;
  }

  async #renew(state: TokenState): Promise<TokenState> {
    if (state.renewable) {
      const answer = await this.#call('POST', 'v1/auth/token/renew-self', state.token, '{}').catch(
        (err: unknown) => err as Error,
      );
      if (!(answer instanceof Error) && answer.status === 200) {
        const renewed = this.#fromAuth(answer, 'token renewal', state.token);
        this.#install(renewed);
        return renewed;
      }
      const why = answer instanceof Error ? answer.message : vaultErrors(answer);
      if (this.#config.token !== undefined) throw new SecretError(`vault: token renewal failed: ${why}`);
      this.#logger.info({ manager: 'vault', error: why }, 'vault: token renewal failed; logging in again');
    } else if (this.#config.token !== undefined) {
      // A token that cannot be renewed is used until Vault refuses it.
      return state;
    }
    this.#state = undefined;
    return this.#authenticate();
  }

  #fromAuth(answer: HttpAnswer, what: string, fallback?: string): TokenState {
    const auth = (
      jsonOf(answer.body) as
        { auth?: { client_token?: unknown; lease_duration?: unknown; renewable?: unknown } } | undefined
    )?.auth;
    const token = typeof auth?.client_token === 'string' ? auth.client_token : fallback;
    if (token === undefined) throw new SecretError(`vault: ${what}: no auth.client_token in the answer`);
    const ttl = typeof auth?.lease_duration === 'number' ? auth.lease_duration : 0;
    return { token, renewAt: renewAt(ttl), renewable: auth?.renewable === true };
  }

  /** Keeps the token and renews it in the background when due, so a long refresh_s does not outlive it. */
  #install(state: TokenState): void {
    this.#state = state;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (state.renewAt === undefined || this.#closed) return;
    // The timer renews unconditionally: it counts from the loop's cached time, so it can fire a
    // little before Date.now() reaches renewAt, and a due-check there would skip the renewal.
    this.#timer = setTimeout(
      () => {
        this.#token(true).catch((err: unknown) =>
          this.#logger.warn(
            { manager: 'vault', error: (err as Error).message },
            'vault: cannot renew the token',
          ),
        );
      },
      Math.max(0, state.renewAt - Date.now()),
    );
    this.#timer.unref();
  }

  #call(method: string, path: string, token: string | undefined, body?: string): Promise<HttpAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token !== undefined) headers['x-vault-token'] = token;
    if (this.#config.namespace !== undefined) headers['x-vault-namespace'] = this.#config.namespace;
    if (body !== undefined) headers['content-type'] = 'application/json';
    return httpCall(
      new URL(path, this.#base),
      {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(this.#ca === undefined ? {} : { ca: this.#ca }),
        timeoutMs: this.#config.timeout_ms,
      },
      'vault',
    );
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}

/** Two thirds into a TTL in seconds; undefined for 0 (a token that never expires, such as root). */
function renewAt(ttlSeconds: number): number | undefined {
  return ttlSeconds > 0 ? Date.now() + (ttlSeconds * 1000 * 2) / 3 : undefined;
}

function encodePath(path: string): string {
  return path
    .split('/')
    .filter((s) => s !== '')
    .map(encodeURIComponent)
    .join('/');
}
