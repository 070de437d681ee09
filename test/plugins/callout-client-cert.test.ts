import assert from 'node:assert/strict';
import { once } from 'node:events';
import { copyFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { connect as netConnect } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { pino } from 'pino';
import { ConfigError } from '../../src/core/plugin.js';
import { pluginImplementation } from '../../src/plugins/index.js';
import { createAuthority, type CertPair } from '../support/certs.js';
import { startGateway } from '../support/in-process.js';
import { instantiate } from '../support/plugin-env.js';
import { skipWithoutSlapd, SLAPD_PEOPLE, startSlapd } from '../support/slapd.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * Callout plugins presenting a client certificate (`tls.cert_file` /
 * `tls.key_file`) to an HTTPS service that requires one, trusting it through
 * `tls.ca_file` with verification on (docs/outbound-tls.md).
 */
const KINDS = ['forward-auth', 'opa', 'http-logger'] as const;
type Kind = (typeof KINDS)[number];

const PATHS: Record<Kind, string> = {
  'forward-auth': '/auth',
  opa: '/v1/data/t/allow',
  'http-logger': '/log',
};

/** Every plugin that calls out over HTTP(S) and so takes the shared `tls` key. */
const CALLOUT_PLUGINS = [
  'forward-auth',
  'opa',
  'authz-casdoor',
  'authz-keycloak',
  'wolf-rbac',
  'feishu-auth',
  'dingtalk-auth',
  'cas-auth',
  'openid-connect',
  'ldap-auth',
  'http-logger',
  'elasticsearch-logger',
  'loki-logger',
  'clickhouse-logger',
  'splunk-hec-logging',
  'sls-logger',
  'loggly',
  'skywalking',
  'skywalking-logger',
  'zipkin',
  'opentelemetry',
  'lago',
  'google-cloud-logging',
  'tencent-cloud-cls',
] as const;

function gatewayYaml(origin: string, tls: string): string {
  const node = (kind: Kind): string => {
    switch (kind) {
      case 'forward-auth':
        return `{ uri: ${origin}/auth, tls: ${tls} }`;
      case 'opa':
        return `{ host: ${origin}, policy: t/allow, tls: ${tls} }`;
      case 'http-logger':
        return `{ uri: ${origin}/log, batch_max_size: 1, max_retry_count: 0, tls: ${tls} }`;
    }
  };
  const policy = (kind: Kind): string => `  - name: ${kind}
    nodes:
      - { id: in, type: listener }
      - { id: call, type: ${kind}, config: ${node(kind)} }
      - { id: ok, type: mocking, config: { response_example: passed, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: in.out, to: call.in }
      - { from: call.success, to: ok.in }
${kind === 'http-logger' ? '' : '      - { from: call.denied, to: client.in }\n      - { from: call.error, to: client.in }\n'}      - { from: ok.success, to: client.in }
`;
  return `routes:
${KINDS.map((k) => `  - { name: ${k}, match: { path: /${k} }, policy: ${k} }`).join('\n')}
policies:
${KINDS.map(policy).join('')}`;
}

describe('callout client certificates: mutual TLS to auth services, authorization servers and loggers', () => {
  const dir = tempDir('switchyard-callout-mtls-');
  const serverCa = createAuthority(dir.path, 'server-ca');
  const clientCa = createAuthority(dir.path, 'client-ca');
  const strangerCa = createAuthority(dir.path, 'stranger-ca');
  const leaf = serverCa.issue('callee', { dns: ['callee.internal'], ips: ['127.0.0.1'] });
  const named = serverCa.issue('named-only', { dns: ['callee.internal'] });
  const gatewayCert = clientCa.issue('gateway', { client: true });
  const strangerCert = strangerCa.issue('stranger', { client: true });
  /** CN of the client certificate of each request that reached a path. */
  const seen = new Map<string, string[]>();
  const servers: Server[] = [];
  let origin: string;
  let namedOrigin: string;

  const listen = async (pair: CertPair): Promise<string> => {
    const server = createServer(
      {
        cert: pair.certPem,
        key: pair.keyPem,
        ca: clientCa.certPem,
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const path = (req.url ?? '').split('?')[0] ?? '';
        const cn = String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '');
        seen.set(path, [...(seen.get(path) ?? []), cn]);
        req.resume();
        req.on('end', () => {
          res.setHeader('content-type', 'application/json');
          res.end(path === PATHS.opa ? '{"result":true}' : '{}');
        });
      },
    );
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  };

  before(async () => {
    origin = await listen(leaf);
    namedOrigin = await listen(named);
  });

  after(() => {
    for (const server of servers) server.close();
    dir.remove();
  });

  const withCert = (pair: CertPair, extra = ''): string =>
    `{ ca_file: '${serverCa.cert}', cert_file: '${pair.cert}', key_file: '${pair.key}'${extra} }`;

  test('callout mTLS: with tls.cert_file the forward-auth, opa and http-logger callouts succeed and present the certificate', async () => {
    seen.clear();
    const gw = await startGateway(gatewayYaml(origin, withCert(gatewayCert)));
    try {
      for (const kind of KINDS) {
        const res = await fetch(`${gw.url}/${kind}`);
        assert.equal(res.status, 200, `${kind}: ${await res.text()}`);
        await waitFor(() => (seen.get(PATHS[kind])?.length ?? 0) > 0, {
          timeoutMs: 20000,
          what: `${kind} reaching the server`,
        });
        assert.deepEqual(seen.get(PATHS[kind]), ['gateway'], `${kind} presented the gateway certificate`);
      }
    } finally {
      await gw.stop();
    }
  });

  test('callout mTLS: without a client certificate the handshake fails: auth nodes answer 502 with their provider code, the logger drops and warns', async () => {
    seen.clear();
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
    const gw = await startGateway(gatewayYaml(origin, `{ ca_file: '${serverCa.cert}' }`), { logger });
    try {
      const auth = await fetch(`${gw.url}/forward-auth`);
      assert.equal(auth.status, 502);
      assert.equal(((await auth.json()) as { error: string }).error, 'provider_error');
      const opa = await fetch(`${gw.url}/opa`);
      assert.equal(opa.status, 502);
      assert.equal(((await opa.json()) as { error: string }).error, 'provider_error');
      const codes = lines.map((l) => (JSON.parse(l) as { code?: string }).code);
      assert.ok(codes.includes('FORWARD_AUTH_ERROR') && codes.includes('OPA_ERROR'), lines.join(''));
      const logged = await fetch(`${gw.url}/http-logger`);
      assert.equal(logged.status, 200, 'a logger never fails the request');
      await waitFor(() => lines.some((l) => l.includes('logger shipment failed')), {
        timeoutMs: 20000,
        what: 'the failed shipment warning',
      });
      assert.equal(seen.size, 0, 'no request got past the handshake');
    } finally {
      await gw.stop();
    }
  });

  test('callout mTLS: a client pair replaced on disk is presented by the next connection, no reload needed', async () => {
    seen.clear();
    const cert = join(dir.path, 'live.crt');
    const key = join(dir.path, 'live.key');
    copyFileSync(strangerCert.cert, cert);
    copyFileSync(strangerCert.key, key);
    const gw = await startGateway(
      gatewayYaml(origin, `{ ca_file: '${serverCa.cert}', cert_file: '${cert}', key_file: '${key}' }`),
    );
    try {
      const refused = await fetch(`${gw.url}/forward-auth`);
      assert.equal(refused.status, 502, 'a certificate from a CA the service does not trust is refused');
      writeFileSync(key, gatewayCert.keyPem);
      writeFileSync(cert, gatewayCert.certPem);
      await waitFor(
        async () => {
          const res = await fetch(`${gw.url}/forward-auth`);
          await res.arrayBuffer();
          return res.status === 200;
        },
        { timeoutMs: 30000, what: 'the callout passing with the new pair' },
      );
      assert.deepEqual(seen.get(PATHS['forward-auth']), ['gateway']);
    } finally {
      await gw.stop();
    }
  });

  test('callout mTLS: tls.server_name names the certificate to expect when the URL holds an address', async () => {
    seen.clear();
    const wrong = await startGateway(gatewayYaml(namedOrigin, withCert(gatewayCert)));
    try {
      const res = await fetch(`${wrong.url}/forward-auth`);
      assert.equal(res.status, 502, 'the certificate does not name 127.0.0.1');
    } finally {
      await wrong.stop();
    }
    const right = await startGateway(
      gatewayYaml(namedOrigin, withCert(gatewayCert, ', server_name: callee.internal')),
    );
    try {
      for (const kind of KINDS) {
        const res = await fetch(`${right.url}/${kind}`);
        assert.equal(res.status, 200, `${kind}: ${await res.text()}`);
      }
      await waitFor(() => (seen.get(PATHS['http-logger'])?.length ?? 0) > 0, {
        timeoutMs: 20000,
        what: 'the log shipment',
      });
    } finally {
      await right.stop();
    }
  });

  test(
    'callout mTLS: ldap-auth over ldaps binds through a directory front that requires a client certificate',
    { skip: skipWithoutSlapd() },
    async () => {
      const slapd = await startSlapd();
      // TLS in front of the real directory: the handshake demands a certificate from client-ca.
      const front: TlsServer = createTlsServer(
        {
          cert: leaf.certPem,
          key: leaf.keyPem,
          ca: clientCa.certPem,
          requestCert: true,
          rejectUnauthorized: true,
        },
        (socket) => {
          const upstream = netConnect(slapd.port, '127.0.0.1');
          socket.pipe(upstream).pipe(socket);
          socket.on('error', () => upstream.destroy());
          upstream.on('error', () => socket.destroy());
        },
      );
      front.listen(0, '127.0.0.1');
      await once(front, 'listening');
      const port = (front.address() as { port: number }).port;
      const yaml = (tls: string) => `routes:
  - { name: l, match: { path: /l }, policy: l }
policies:
  - name: l
    nodes:
      - { id: in, type: listener }
      - { id: dir, type: ldap-auth, config: { ldap_uri: 'ldaps://127.0.0.1:${port}', base_dn: '${SLAPD_PEOPLE}', uid: uid, tls: ${tls} } }
      - { id: ok, type: mocking, config: { response_example: bound, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: in.out, to: dir.in }
      - { from: dir.success, to: ok.in }
      - { from: dir.denied, to: client.in }
      - { from: dir.error, to: client.in }
      - { from: ok.success, to: client.in }
`;
      const authorization = `Basic ${Buffer.from('alice:alice-pw').toString('base64')}`;
      try {
        const presenting = await startGateway(yaml(withCert(gatewayCert)));
        try {
          const res = await fetch(`${presenting.url}/l`, { headers: { authorization } });
          assert.equal(`${res.status} ${await res.text()}`, '200 bound');
        } finally {
          await presenting.stop();
        }
        const without = await startGateway(yaml(`{ ca_file: '${serverCa.cert}' }`));
        try {
          const res = await fetch(`${without.url}/l`, { headers: { authorization } });
          assert.equal(res.status, 502, 'no client certificate: the directory cannot be asked');
          assert.equal(((await res.json()) as { error: string }).error, 'provider_error');
        } finally {
          await without.stop();
        }
      } finally {
        front.close();
        await slapd.stop();
      }
    },
  );

  test('callout mTLS: a bad tls file is refused at load, naming the key (tls.cert_file, tls.key_file, tls.ca_file)', () => {
    const forwardAuth = pluginImplementation('forward-auth')!;
    const load = (tls: Record<string, string>) => () =>
      instantiate(forwardAuth, { uri: 'https://auth.internal/verify', tls });
    const missing = join(dir.path, 'absent.pem');
    const key = (path: string) => (err: unknown) => err instanceof ConfigError && err.path === path;
    assert.throws(load({ cert_file: missing, key_file: gatewayCert.key }), key('tls.cert_file'));
    assert.throws(load({ cert_file: gatewayCert.cert }), key('tls.key_file'));
    assert.throws(load({ cert_file: gatewayCert.cert, key_file: strangerCert.key }), key('tls.key_file'));
    assert.throws(load({ ca_file: missing }), key('tls.ca_file'));
  });

  test('callout mTLS: every callout plugin accepts the shared tls shape and loads with a client certificate', async () => {
    const tls = {
      ca_file: serverCa.cert,
      cert_file: gatewayCert.cert,
      key_file: gatewayCert.key,
      server_name: 'callee.internal',
    };
    for (const type of CALLOUT_PLUGINS) {
      const definition = pluginImplementation(type);
      assert.ok(definition !== undefined, type);
      const properties = definition.schema.properties as Record<string, unknown>;
      assert.deepEqual(
        Object.keys((properties['tls'] as { properties?: object } | undefined)?.properties ?? {}),
        ['ca_file', 'cert_file', 'key_file', 'server_name'],
        `${type} has the shared tls key`,
      );
    }
    const node = instantiate(pluginImplementation('http-logger')!, { uri: 'https://logs.internal/', tls });
    await node.close?.();
    const rejected = () =>
      instantiate(pluginImplementation('loki-logger')!, {
        endpoint_addrs: ['https://loki.internal'],
        tls: { ...tls, unknown: true },
      });
    assert.throws(rejected, /unknown|additional/i);
  });
});
