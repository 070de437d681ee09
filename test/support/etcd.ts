import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, fetch } from 'undici';
import { startDaemon } from './daemon.js';
import { tempDir } from './temp-dir.js';

const BINARY = process.env.ETCD_BIN ?? 'etcd';

/** Serve the client port over TLS (`https://`), optionally requiring client certificates. */
export interface EtcdTlsOptions {
  /** PEM files of etcd's own certificate and key. */
  cert: string;
  key: string;
  /** PEM CA that signs client certificates (`--trusted-ca-file`); with it, etcd runs `--client-cert-auth`. */
  clientCa?: string;
  /** CA of etcd's certificate and a client pair, used by the helper's own calls. */
  ca: string;
  clientCert?: string;
  clientKey?: string;
}

export interface EtcdServer {
  /** `http://127.0.0.1:<client port>` (`https://` with `tls`) */
  readonly url: string;
  /** POSTs JSON to the v3 gateway (keys and values base64 as etcd wants them) and returns the parsed answer. */
  call(
    path: string,
    body: unknown,
    token?: string,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** Puts `key` = `value` (plain text; encoded here). */
  put(key: string, value: string): Promise<void>;
  /** Keys under `prefix`, decoded, in key order. */
  keys(prefix: string): Promise<string[]>;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
}

let available: boolean | undefined;

/**
 * `skip` option for suites that need etcd: a reason when the binary is
 * missing on a developer machine; `false` in CI, where `startEtcd` then
 * fails the suite instead of hiding it.
 */
export function skipWithoutEtcd(): string | false {
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') return false;
  available ??= spawnSync(BINARY, ['--version'], { stdio: 'ignore' }).status === 0;
  return available ? false : `${BINARY} not found (install etcd-server)`;
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** Starts the system `etcd` as a one-member cluster on free loopback ports, in a temporary data dir. */
export async function startEtcd(options: { tls?: EtcdTlsOptions } = {}): Promise<EtcdServer> {
  const tls = options.tls;
  const scheme = tls === undefined ? 'http' : 'https';
  const dispatcher =
    tls === undefined
      ? undefined
      : new Agent({
          connect: {
            ca: readFileSync(tls.ca),
            ...(tls.clientCert === undefined ? {} : { cert: readFileSync(tls.clientCert) }),
            ...(tls.clientKey === undefined ? {} : { key: readFileSync(tls.clientKey) }),
          },
        });
  const get = (url: string, init: Parameters<typeof fetch>[1] = {}) =>
    fetch(url, dispatcher === undefined ? init : { ...init, dispatcher });
  const dir = tempDir('switchyard-etcd-');
  let started;
  try {
    started = await startDaemon({
      name: 'etcd',
      ports: 2,
      timeoutMs: 20000,
      command: ([client, peer], attempt) => {
        const url = `${scheme}://127.0.0.1:${client}`;
        const peerUrl = `http://127.0.0.1:${peer}`;
        return {
          bin: BINARY,
          args: [
            ...['--name', 'test', '--data-dir', `${dir.path}/data-${attempt}`],
            ...['--listen-client-urls', url, '--advertise-client-urls', url],
            ...['--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl],
            ...['--initial-cluster', `test=${peerUrl}`],
            ...(tls === undefined ? [] : ['--cert-file', tls.cert, '--key-file', tls.key]),
            ...(tls?.clientCa === undefined ? [] : ['--trusted-ca-file', tls.clientCa, '--client-cert-auth']),
          ],
        };
      },
      ready: async ([client]) => {
        try {
          const res = await get(`${scheme}://127.0.0.1:${client}/health`);
          return res.status === 200 && ((await res.json()) as { health?: string }).health === 'true';
        } catch {
          return false;
        }
      },
    });
  } catch (err) {
    dir.remove();
    throw err;
  }
  const { daemon } = started;
  const url = `${scheme}://127.0.0.1:${started.ports[0]}`;

  const call: EtcdServer['call'] = async (path, body, token) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== undefined) headers['authorization'] = token;
    const res = await get(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  return {
    url,
    call,
    async put(key, value) {
      const res = await call('/v3/kv/put', { key: b64(key), value: b64(value) });
      if (res.status !== 200) throw new Error(`etcd put ${key}: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async keys(prefix) {
      const end = Buffer.from(prefix);
      end[end.length - 1]!++;
      const res = await call('/v3/kv/range', {
        key: b64(prefix),
        range_end: end.toString('base64'),
        keys_only: true,
      });
      const kvs = (res.body['kvs'] ?? []) as { key: string }[];
      return kvs.map((kv) => Buffer.from(kv.key, 'base64').toString('utf8'));
    },
    async stop() {
      await dispatcher?.close();
      await daemon.stop();
      dir.remove();
    },
  };
}
