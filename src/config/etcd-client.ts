/**
 * A small client for etcd's v3 HTTP/JSON gateway (`/v3/kv/*`, `/v3/watch`,
 * `/v3/auth/authenticate`): keys and values travel base64-encoded in JSON.
 * Endpoints come from system.yaml only. A request goes to the endpoint that
 * last answered and falls over to the next on a network error or a 5xx.
 * `https://` endpoints use `tls` (docs/etcd.md#tls): a private CA, a client
 * certificate for `--client-cert-auth`, re-read when replaced on disk.
 */
import type { Agent, Response } from 'undici';
import { loadUndici } from '../runtime/load-undici.js';
import { undiciConnect } from '../tls/undici-connect.js';
import { ConfigRejected } from './schema-validate.js';
import { ETCD_TLS_KEY as TLS_KEY, etcdTlsMaterial, type EtcdTlsConfig } from './etcd-tls.js';

export { etcdTlsIssues, type EtcdTlsConfig } from './etcd-tls.js';

export interface EtcdSettings {
  endpoints: string[];
  user?: string;
  password?: string;
  timeout_ms: number;
  tls?: EtcdTlsConfig;
}

export interface KeyValue {
  key: string;
  value: Buffer;
}

/** A key as a revision-aware read returns it; `value` is undefined for a keys-only read. */
export interface RevisionedKeyValue {
  key: string;
  value: Buffer | undefined;
  /** The store revision of the key's last change, as etcd spells it (a decimal string). */
  modRevision: string;
}

interface RawKeyValue {
  key?: string;
  value?: string;
  mod_revision?: string;
}

const revisioned = (kv: RawKeyValue, withValue: boolean): RevisionedKeyValue => ({
  key: Buffer.from(kv.key ?? '', 'base64').toString('utf8'),
  value: withValue ? Buffer.from(kv.value ?? '', 'base64') : undefined,
  modRevision: kv.mod_revision ?? '0',
});

/** etcd could not be reached, or refused a request: the configuration store is unavailable. */
export class EtcdUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EtcdUnavailable';
  }
}

/**
 * An Admin write's guarded transaction failed: another writer changed one of
 * the resources it touches since this gateway read them. Nothing of that
 * transaction was applied. `resources` are `<family>/<name>`.
 */
export class EtcdConflict extends Error {
  constructor(readonly resources: readonly string[]) {
    super(`changed in etcd by another writer meanwhile: ${resources.join(', ')}`);
    this.name = 'EtcdConflict';
  }
}

const b64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');

/** The first key after every key that starts with `prefix` (etcd's range_end for a prefix). */
export function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

export class EtcdClient {
  readonly #endpoints: string[];
  readonly #settings: EtcdSettings;
  #current = 0;
  #token: string | undefined;

  /** Carries the TLS material to `https://` endpoints; undefined when every endpoint is plain http. */
  readonly #dispatcher: Agent | undefined;

  constructor(settings: EtcdSettings) {
    this.#settings = settings;
    this.#endpoints = settings.endpoints.map((e) => e.replace(/\/+$/, ''));
    this.#endpoints.forEach((endpoint, i) => {
      if (!/^https?:\/\//i.test(endpoint))
        throw new ConfigRejected([
          {
            path: `config.etcd.endpoints[${i}]`,
            message: `'${endpoint}' must start with http:// or https://`,
          },
        ]);
    });
    const tls = this.#endpoints.some((e) => /^https:/i.test(e)) ? etcdTlsMaterial(settings.tls) : undefined;
    this.#dispatcher =
      tls === undefined
        ? undefined
        : new (loadUndici().Agent)({
            connect: undiciConnect(tls, { timeout: settings.timeout_ms, allowH2: false }),
          });
  }

  /** Closes the connections to etcd (watches are closed by their own handles). */
  async close(): Promise<void> {
    await this.#dispatcher?.close();
  }

  /** Every key under `prefix`, in key order. */
  async range(prefix: string): Promise<KeyValue[]> {
    const body = (await this.#call('/v3/kv/range', {
      key: b64(prefix),
      range_end: b64(prefixEnd(prefix)),
    })) as {
      kvs?: { key?: string; value?: string }[];
    };
    return (body.kvs ?? []).map((kv) => ({
      key: Buffer.from(kv.key ?? '', 'base64').toString('utf8'),
      value: Buffer.from(kv.value ?? '', 'base64'),
    }));
  }

  /**
   * Every key under `prefix` in key order with its revisions, and the store
   * revision the read saw. `keysOnly` leaves the values out; `revision` reads
   * the store as it was then; `minModRevision` returns only keys changed since.
   */
  async rangeRevisions(
    prefix: string,
    options: { keysOnly?: boolean; revision?: string; minModRevision?: string } = {},
  ): Promise<{ revision: string; kvs: RevisionedKeyValue[] }> {
    const body = (await this.#call('/v3/kv/range', {
      key: b64(prefix),
      range_end: b64(prefixEnd(prefix)),
      ...(options.keysOnly === true ? { keys_only: true } : {}),
      ...(options.revision === undefined ? {} : { revision: options.revision }),
      ...(options.minModRevision === undefined ? {} : { min_mod_revision: options.minModRevision }),
    })) as { header?: { revision?: string }; kvs?: RawKeyValue[] };
    return {
      revision: body.header?.revision ?? '0',
      kvs: (body.kvs ?? []).map((kv) => revisioned(kv, options.keysOnly !== true)),
    };
  }

  /**
   * One transaction: when every key of `guards` is at the mod_revision given
   * (absent for `undefined`), and no key under `unchanged.prefix` (optional)
   * was put after store revision `unchanged.revision`, applies `ops` (a put,
   * or a delete when `value` is undefined) and answers the revision it wrote.
   * Otherwise applies nothing and answers each guarded key's current
   * mod_revision ('0' when absent), and the keys under `unchanged.prefix` put since.
   */
  async txn(
    guards: readonly { key: string; modRevision: string | undefined }[],
    ops: readonly { key: string; value: string | undefined }[],
    unchanged?: { prefix: string; revision: string },
  ): Promise<
    | { succeeded: true; revision: string }
    | { succeeded: false; current: Map<string, string>; changedSince: string[] }
  > {
    const since = unchanged === undefined ? undefined : String(BigInt(unchanged.revision) + 1n);
    const range =
      unchanged === undefined
        ? undefined
        : { key: b64(unchanged.prefix), range_end: b64(prefixEnd(unchanged.prefix)) };
    const body = (await this.#call('/v3/kv/txn', {
      compare: [
        ...guards.map((g) =>
          g.modRevision === undefined
            ? { key: b64(g.key), target: 'VERSION', result: 'EQUAL', version: '0' }
            : { key: b64(g.key), target: 'MOD', result: 'EQUAL', mod_revision: g.modRevision },
        ),
        // etcd 3.3+: a compare over a range holds when it holds for every key in it.
        ...(range === undefined ? [] : [{ ...range, target: 'MOD', result: 'LESS', mod_revision: since }]),
      ],
      success: ops.map((op) =>
        op.value === undefined
          ? { request_delete_range: { key: b64(op.key) } }
          : { request_put: { key: b64(op.key), value: b64(op.value) } },
      ),
      failure: [
        ...guards.map((g) => ({ request_range: { key: b64(g.key), keys_only: true } })),
        ...(range === undefined
          ? []
          : [{ request_range: { ...range, keys_only: true, min_mod_revision: since } }]),
      ],
    })) as {
      header?: { revision?: string };
      succeeded?: boolean;
      responses?: { response_range?: { kvs?: RawKeyValue[] } }[];
    };
    if (body.succeeded === true) return { succeeded: true, revision: body.header?.revision ?? '0' };
    const current = new Map<string, string>();
    guards.forEach((g, i) => {
      const kv = body.responses?.[i]?.response_range?.kvs?.[0];
      current.set(g.key, kv?.mod_revision ?? '0');
    });
    const changedSince = (body.responses?.[guards.length]?.response_range?.kvs ?? []).map((kv) =>
      Buffer.from(kv.key ?? '', 'base64').toString('utf8'),
    );
    return { succeeded: false, current, changedSince: range === undefined ? [] : changedSince };
  }

  /** One key with its mod_revision, or undefined when it is absent. */
  async get(key: string): Promise<RevisionedKeyValue | undefined> {
    const body = (await this.#call('/v3/kv/range', { key: b64(key) })) as { kvs?: RawKeyValue[] };
    const kv = body.kvs?.[0];
    return kv === undefined ? undefined : revisioned(kv, true);
  }

  async put(key: string, value: string): Promise<void> {
    await this.#call('/v3/kv/put', { key: b64(key), value: b64(value) });
  }

  async delete(key: string): Promise<void> {
    await this.#call('/v3/kv/deleterange', { key: b64(key) });
  }

  /**
   * Streams changes under `prefix`: `onEvents` runs for each batch of
   * changes, `onConnected` each time the stream is (re)established (the
   * caller re-reads everything then, so nothing missed while it was down is
   * lost). Reconnects with a growing delay until closed.
   */
  watch(
    prefix: string,
    handlers: { onEvents: () => void; onConnected: () => void; onError: (err: Error) => void },
  ): {
    close(): void;
  } {
    let closed = false;
    let controller: AbortController | undefined;
    let delay = 250;
    const run = async (): Promise<void> => {
      while (!closed) {
        controller = new AbortController();
        try {
          await this.#stream(prefix, controller.signal, handlers, () => (delay = 250));
          if (!closed) handlers.onError(new EtcdUnavailable('etcd closed the watch stream'));
        } catch (err) {
          if (closed) return;
          handlers.onError(err instanceof Error ? err : new Error(String(err)));
        }
        if (closed) return;
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
        delay = Math.min(delay * 2, 5000);
      }
    };
    void run();
    return {
      close: () => {
        closed = true;
        controller?.abort();
      },
    };
  }

  async #stream(
    prefix: string,
    signal: AbortSignal,
    handlers: { onEvents: () => void; onConnected: () => void },
    healthy: () => void,
  ): Promise<void> {
    const response = await this.#post(
      '/v3/watch',
      {
        create_request: { key: b64(prefix), range_end: b64(prefixEnd(prefix)) },
      },
      signal,
    );
    if (response.body === null) throw new EtcdUnavailable('etcd watch answered without a body');
    const decoder = new TextDecoder();
    let pending = '';
    for await (const chunk of response.body) {
      pending += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line === '') continue;
        const message = JSON.parse(line) as {
          result?: { created?: boolean; events?: unknown[] };
          error?: unknown;
        };
        if (message.error !== undefined)
          throw new EtcdUnavailable(`etcd watch failed: ${JSON.stringify(message.error)}`);
        if (message.result?.created === true) {
          healthy();
          handlers.onConnected();
        }
        if ((message.result?.events?.length ?? 0) > 0) handlers.onEvents();
      }
    }
  }

  /** A unary call: JSON in, JSON out, re-authenticating once when the token is refused. */
  async #call(path: string, body: unknown): Promise<unknown> {
    if (this.#settings.user !== undefined && this.#token === undefined) await this.#authenticate();
    let response = await this.#post(path, body, AbortSignal.timeout(this.#settings.timeout_ms));
    let text = await response.text();
    if (this.#settings.user !== undefined && isAuthFailure(response.status, text)) {
      await this.#authenticate();
      response = await this.#post(path, body, AbortSignal.timeout(this.#settings.timeout_ms));
      text = await response.text();
    }
    if (response.status !== 200)
      throw new EtcdUnavailable(`etcd ${path} answered ${response.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as unknown;
  }

  async #authenticate(): Promise<void> {
    this.#token = undefined;
    const response = await this.#post(
      '/v3/auth/authenticate',
      { name: this.#settings.user, password: this.#settings.password ?? '' },
      AbortSignal.timeout(this.#settings.timeout_ms),
    );
    const text = await response.text();
    if (response.status !== 200)
      throw new EtcdUnavailable(
        `etcd refused the credentials of user '${this.#settings.user}': ${text.slice(0, 200)}`,
      );
    const token = (JSON.parse(text) as { token?: unknown }).token;
    if (typeof token !== 'string')
      throw new EtcdUnavailable('etcd answered the authentication without a token');
    this.#token = token;
  }

  /** POSTs to the current endpoint, moving on to the next on a network error or a 5xx. */
  async #post(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    const failures: string[] = [];
    for (let attempt = 0; attempt < this.#endpoints.length; attempt++) {
      const index = (this.#current + attempt) % this.#endpoints.length;
      const endpoint = this.#endpoints[index]!;
      try {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (this.#token !== undefined) headers['authorization'] = this.#token;
        const response = await loadUndici().fetch(`${endpoint}${path}`, {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal,
          ...(this.#dispatcher === undefined ? {} : { dispatcher: this.#dispatcher }),
        });
        if (response.status >= 500 && !isAuthFailure(response.status, '')) {
          failures.push(`${endpoint}: ${response.status}`);
          await response.body?.cancel();
          continue;
        }
        this.#current = index;
        return response;
      } catch (err) {
        if (signal.aborted && (signal.reason as Error | undefined)?.name !== 'TimeoutError') throw err;
        const hasCert = this.#settings.tls?.cert_file !== undefined;
        failures.push(`${endpoint}: ${describe(err)}${tlsHint(endpoint, err, hasCert)}`);
      }
    }
    throw new EtcdUnavailable(`no etcd endpoint answered ${path} (${failures.join('; ')})`);
  }
}

function isAuthFailure(status: number, text: string): boolean {
  return status === 401 || /invalid auth token|user name is empty/i.test(text);
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message ?? String(err);
}

/**
 * Names the key to look at when a TLS handshake with etcd failed: its
 * certificate was not trusted (`ca_file`), did not carry the expected name
 * (`server_name`), or etcd refused the client certificate (`cert_file`).
 */
function tlsHint(endpoint: string, err: unknown, hasCert: boolean): string {
  if (!/^https:/i.test(endpoint)) return '';
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const text = `${cause?.code ?? ''} ${cause?.message ?? ''}`;
  if (/CERT_ALTNAME|Hostname\/IP does not match/i.test(text))
    return ` — etcd's certificate does not name this host: check ${TLS_KEY}.server_name`;
  if (
    /UNABLE_TO_VERIFY|SELF_SIGNED|UNABLE_TO_GET_ISSUER|CERT_UNTRUSTED|CERT_NOT_YET|CERT_HAS_EXPIRED/i.test(
      text,
    )
  )
    return ` — etcd's certificate is not trusted: check ${TLS_KEY}.ca_file`;
  if (/CERTIFICATE_REQUIRED|certificate required|HANDSHAKE_FAILURE/i.test(text))
    return ` — etcd requires a client certificate: set ${TLS_KEY}.cert_file and ${TLS_KEY}.key_file`;
  if (/BAD_CERTIFICATE|UNKNOWN_CA|bad certificate|unknown ca/i.test(text))
    return ` — etcd refused the client certificate: check ${TLS_KEY}.cert_file`;
  // TLS 1.3: etcd checks the client certificate after the handshake and just closes the connection.
  if (/UND_ERR_SOCKET|ECONNRESET|other side closed/i.test(text))
    return hasCert
      ? ` — etcd closed the connection after the TLS handshake, as it does when it does not accept the client certificate: check ${TLS_KEY}.cert_file`
      : ` — etcd closed the connection after the TLS handshake, as it does when it requires a client certificate (--client-cert-auth): set ${TLS_KEY}.cert_file and ${TLS_KEY}.key_file`;
  return '';
}
