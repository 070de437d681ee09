import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { createAuthority } from '../support/certs.js';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { freePort } from '../support/free-port.js';
import { startGateway } from '../support/in-process.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * One callout of each kind (auth service, provider client, OIDC
 * introspection, logger, FaaS) against an HTTPS server whose certificate
 * comes from a private CA the gateway was not told about.
 */
const KINDS = ['forward-auth', 'opa', 'openid-connect', 'http-logger', 'azure-functions'] as const;
type Kind = (typeof KINDS)[number];

/** Path the callout of each kind reaches on the HTTPS server. */
const PATHS: Record<Kind, string> = {
  'forward-auth': '/auth',
  opa: '/v1/data/t/allow',
  'openid-connect': '/introspect',
  'http-logger': '/log',
  'azure-functions': '/fn',
};

function gatewayYaml(origin: string, verify: string): string {
  const node = (kind: Kind): string => {
    switch (kind) {
      case 'forward-auth':
        return `{ uri: ${origin}/auth${verify} }`;
      case 'opa':
        return `{ host: ${origin}, policy: t/allow${verify} }`;
      case 'openid-connect':
        return `{ introspection_endpoint: ${origin}/introspect, client_id: gw, client_secret: s3cret${verify} }`;
      case 'http-logger':
        return `{ uri: ${origin}/log, batch_max_size: 1, auth_header: Bearer-logger-token${verify} }`;
      case 'azure-functions':
        return `{ function_uri: ${origin}/fn, authorization: { apikey: fn-key }${verify} }`;
    }
  };
  const policy = (kind: Kind): string => {
    const outcomes =
      kind === 'openid-connect'
        ? ['denied', 'redirect']
        : kind === 'forward-auth' || kind === 'opa'
          ? ['denied']
          : [];
    const answers = kind === 'azure-functions' ? 'client' : 'ok';
    return `  - name: ${kind}
    nodes:
      - { id: in, type: listener }
      - { id: call, type: ${kind}, config: ${node(kind)} }
      - { id: ok, type: mocking, config: { response_example: passed, content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: in.out, to: call.in }
      - { from: call.success, to: ${answers}.in }
${outcomes.map((o) => `      - { from: call.${o}, to: client.in }\n`).join('')}      - { from: ok.success, to: client.in }
`;
  };
  return `routes:
${KINDS.map((k) => `  - { name: ${k}, match: { path: /${k} }, policy: ${k} }`).join('\n')}
policies:
${KINDS.map(policy).join('')}`;
}

/** What each kind's route needs so its callout is made (a bearer token for introspection). */
const HEADERS: Record<Kind, Record<string, string>> = {
  'forward-auth': {},
  opa: {},
  'openid-connect': { authorization: 'Bearer opaque-token' },
  'http-logger': {},
  'azure-functions': {},
};

describe('outbound TLS: credentialed callouts verify certificates by default', () => {
  const dir = tempDir('switchyard-outbound-tls-');
  const ca = createAuthority(dir.path, 'private');
  const leaf = ca.issue('callee', { dns: ['localhost'], ips: ['127.0.0.1'] });
  const hits = new Map<string, number>();
  let server: Server;
  let origin: string;

  before(async () => {
    server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (path === PATHS.opa) res.end('{"result":true}');
        else if (path === PATHS['openid-connect']) res.end('{"active":true,"sub":"u"}');
        else if (path === PATHS['azure-functions']) res.end('{"fn":"answered"}');
        else res.end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  after(() => {
    server.close();
    dir.remove();
  });

  const reached = (kind: Kind): number => hits.get(PATHS[kind]) ?? 0;

  test('outbound TLS: with the defaults every kind refuses the untrusted certificate and sends nothing', async () => {
    hits.clear();
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
    const gw = await startGateway(gatewayYaml(origin, ''), { logger });
    try {
      for (const kind of KINDS) {
        const res = await fetch(`${gw.url}/${kind}`, { headers: HEADERS[kind] });
        await res.arrayBuffer();
        if (kind !== 'http-logger') assert.notEqual(res.status, 200, `${kind} must not pass`);
        assert.equal(reached(kind), 0, `${kind}: no request reached the untrusted server`);
      }
      assert.ok(!lines.some((l) => l.includes('are not verified')), 'no verification warning by default');
    } finally {
      await gw.stop();
    }
  });

  test('outbound TLS: ssl_verify false lets every kind through and warns at load naming the policy and node', async () => {
    hits.clear();
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
    const gw = await startGateway(gatewayYaml(origin, ', ssl_verify: false'), { logger });
    try {
      for (const kind of KINDS) {
        const res = await fetch(`${gw.url}/${kind}`, { headers: HEADERS[kind] });
        const body = await res.text();
        assert.equal(res.status, 200, `${kind}: ${body}`);
        await waitFor(() => reached(kind) > 0, { timeoutMs: 10000, what: `${kind} reaching the server` });
        assert.ok(
          lines.some(
            (l) =>
              l.includes(`policy '${kind}'`) && l.includes("node 'call'") && l.includes('ssl_verify: false'),
          ),
          `a WARN names policy '${kind}', node 'call': ${lines.join('')}`,
        );
      }
      assert.ok(lines.every((l) => (JSON.parse(l) as { level: number }).level === 40));
    } finally {
      await gw.stop();
    }
  });

  test('outbound TLS: a private CA trusted through NODE_EXTRA_CA_CERTS is accepted with verification on', async () => {
    hits.clear();
    const gwPath = join(dir.path, 'gateway.yaml');
    const sysPath = join(dir.path, 'system.yaml');
    const port = await freePort();
    writeFileSync(gwPath, gatewayYaml(origin, ''));
    writeFileSync(
      sysPath,
      `listener: { bind: 127.0.0.1, port: ${port} }\ntimeouts: { shutdown_timeout_seconds: 5 }\n`,
    );
    const p = spawnGateway(['--system-config', sysPath, '--gateway-config', gwPath], {
      NODE_EXTRA_CA_CERTS: ca.cert,
    });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/`, 30000);
      for (const kind of KINDS) {
        const res = await fetch(`http://127.0.0.1:${port}/${kind}`, { headers: HEADERS[kind] });
        const body = await res.text();
        assert.equal(res.status, 200, `${kind}: ${body}`);
        await waitFor(() => reached(kind) > 0, { timeoutMs: 10000, what: `${kind} reaching the server` });
      }
      assert.doesNotMatch(p.output(), /are not verified/);
    } finally {
      assert.equal(await p.stop(), 0);
    }
  });

  test('outbound TLS: ldap-auth verifies the directory certificate unless tls_verify is false, which warns', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
    const ldapPort = await freePort();
    const yaml = (extra: string) => `routes:
  - { name: l, match: { path: /l }, policy: l }
policies:
  - name: l
    nodes:
      - { id: in, type: listener }
      - { id: dir, type: ldap-auth, config: { ldap_uri: 'ldaps://127.0.0.1:${ldapPort}', base_dn: 'dc=x'${extra} } }
      - { id: client, type: client }
    edges:
      - { from: in.out, to: dir.in }
      - { from: dir.success, to: client.in }
      - { from: dir.denied, to: client.in }
`;
    const strict = await startGateway(yaml(''), { logger });
    await strict.stop();
    assert.ok(!lines.some((l) => l.includes('tls_verify')), lines.join(''));
    const lax = await startGateway(yaml(', tls_verify: false'), { logger });
    await lax.stop();
    assert.ok(
      lines.some(
        (l) => l.includes("policy 'l'") && l.includes("node 'dir'") && l.includes('tls_verify: false'),
      ),
      lines.join(''),
    );
  });
});
