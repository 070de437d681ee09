import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Browser } from '../../support/browser.js';
import { freePort } from '../../support/free-port.js';
import { request, type SimpleResponse } from '../../support/http.js';
import { startGateway, type RunningGateway } from '../../support/in-process.js';
import { startIdp, type TestIdp } from '../../support/oidc-idp.js';
import { createTestPki, type TestPki } from '../../support/origins.js';

const CLIENT = { clientId: 'gateway', clientSecret: 'gateway-secret' };
const SECRET = 'oidc session secret for id token tests';

/** Rewrites the token endpoint's id_token on its way back to the gateway. */
type IdTokenRewrite = (idToken: string) => string;

interface Relay {
  url: string;
  rewrite: IdTokenRewrite | undefined;
  close(): Promise<void>;
}

/** A relay in front of the provider (http, or https with the test PKI's server certificate). */
async function startRelay(idp: TestIdp, tls?: TestPki): Promise<Relay> {
  const state = { rewrite: undefined as IdTokenRewrite | undefined };
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (
          !['host', 'connection', 'content-length', 'transfer-encoding'].includes(k) &&
          typeof v === 'string'
        )
          headers[k] = v;
      }
      const method = req.method ?? 'GET';
      fetch(`${idp.issuer}${req.url ?? '/'}`, {
        method,
        headers,
        ...(method === 'GET' ? {} : { body: Buffer.concat(chunks) }),
      })
        .then(async (answer) => {
          let body = await answer.text();
          const rewrite = state.rewrite;
          if (rewrite !== undefined && (req.url ?? '').startsWith('/token') && answer.ok) {
            const doc = JSON.parse(body) as { id_token?: string };
            if (doc.id_token !== undefined) doc.id_token = rewrite(doc.id_token);
            body = JSON.stringify(doc);
          }
          res.writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'application/json',
          });
          res.end(body);
        })
        .catch((err: unknown) => {
          res.writeHead(502);
          res.end(String(err));
        });
    });
  };
  const server =
    tls === undefined
      ? createServer(handle)
      : createHttpsServer({ cert: readFileSync(tls.serverCert), key: readFileSync(tls.serverKey) }, handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${port}`,
    get rewrite() {
      return state.rewrite;
    },
    set rewrite(v: IdTokenRewrite | undefined) {
      state.rewrite = v;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function policy(name: string, config: Record<string, unknown>): string {
  return `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: oidc, type: openid-connect, config: ${JSON.stringify(config)} }
      - { id: show, type: echo, config: { body: 'user={{message.user_id}}' } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: oidc.in }
      - { from: oidc.success, to: show.in }
      - { from: oidc.denied, to: out.in }
      - { from: oidc.redirect, to: out.in }
      - { from: oidc.error, to: out.in }
      - { from: show.success, to: out.in }`;
}

const message = (res: SimpleResponse): string =>
  String((JSON.parse(res.body) as { message?: unknown }).message);

describe('openid-connect: what the ID token validation refuses (openid-client)', () => {
  let idp: TestIdp;
  let relay: Relay;
  let httpsRelay: Relay;
  let pki: TestPki;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startIdp({
      ...CLIENT,
      redirectUris: [`${base}/app/callback`, `${base}/tls/callback`, `${base}/strict/callback`],
    });
    relay = await startRelay(idp);
    pki = createTestPki();
    httpsRelay = await startRelay(idp, pki);
    const interactive = (path: string, extra: Record<string, unknown>) => ({
      bearer_only: false,
      discovery: idp.discovery,
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
      redirect_uri: `/${path}/callback`,
      session: { secret: SECRET, cookie: { name: `${path}_session`, path: `/${path}` } },
      ...extra,
    });
    gw = await startGateway(
      `
routes:
  - { name: app, match: { path: /app/* }, policy: app }
  - { name: tls, match: { path: /tls/* }, policy: tls }
  - { name: strict, match: { path: /strict/* }, policy: strict }
  - { name: jwks-lax, match: { path: /jwks-lax/* }, policy: jwks-lax }
  - { name: jwks-strict, match: { path: /jwks-strict/* }, policy: jwks-strict }
policies:
${policy('app', interactive('app', { token_endpoint: `${relay.url}/token` }))}
${policy('tls', interactive('tls', { token_endpoint: `${httpsRelay.url}/token`, ssl_verify: false }))}
${policy('strict', interactive('strict', { token_endpoint: `${httpsRelay.url}/token` }))}
${policy('jwks-lax', { jwks_uri: `${httpsRelay.url}/jwks`, ssl_verify: false })}
${policy('jwks-strict', { jwks_uri: `${httpsRelay.url}/jwks` })}
`,
      {
        systemYaml: `listener: { bind: 127.0.0.1, port: ${port} }\ntimeouts: { shutdown_timeout_seconds: 5 }\n`,
      },
    );
  });
  after(async () => {
    await gw?.stop();
    await relay?.close();
    await httpsRelay?.close();
    await idp?.close();
    pki?.remove();
  });

  /** The whole browser login; `authorize` may edit the authorization request before the browser sends it. */
  async function login(path: string, authorize?: (url: URL) => void): Promise<SimpleResponse[]> {
    const browser = new Browser();
    const start = `${base}/${path}/home`;
    const first = await browser.get(start);
    assert.equal(first.status, 302, first.body);
    const target = new URL(String(first.headers.location));
    authorize?.(target);
    const atProvider = await browser.get(target.toString());
    return [first, ...(await browser.follow(target.toString(), atProvider))];
  }

  test('openid-connect: an untouched login through the relay succeeds', async () => {
    idp.user = 'grace';
    const last = (await login('app')).at(-1)!;
    assert.equal(last.status, 200, last.body);
    assert.equal(last.body, 'user=grace');
  });

  test('openid-connect: an ID token whose payload was tampered with is refused (signature checked against the JWKS)', async () => {
    idp.user = 'heidi';
    relay.rewrite = (idToken) => {
      const [header, payload, signature] = idToken.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      claims['sub'] = 'root';
      return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    };
    try {
      const last = (await login('app')).at(-1)!;
      assert.equal(last.status, 401, last.body);
      assert.match(message(last), /id_token rejected: .*signature/);
      assert.equal(last.headers['www-authenticate'], 'Bearer error="invalid_token"');
    } finally {
      relay.rewrite = undefined;
    }
  });

  test('openid-connect: an ID token carrying another nonce than the login sent is refused', async () => {
    const last = (
      await login('app', (url) => {
        url.searchParams.set('nonce', 'a-nonce-the-gateway-never-sent');
      })
    ).at(-1)!;
    assert.equal(last.status, 401, last.body);
    assert.match(message(last), /id_token rejected: .*nonce/);
  });

  test('openid-connect: an ID token for another client (audience) is refused', async () => {
    relay.rewrite = (idToken) => {
      // Same signature, other audience: refused either way, the claim check names it first.
      const [header, payload, signature] = idToken.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      claims['aud'] = 'some-other-client';
      return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
    };
    try {
      const last = (await login('app')).at(-1)!;
      assert.equal(last.status, 401, last.body);
      assert.match(message(last), /id_token rejected: .*aud/);
    } finally {
      relay.rewrite = undefined;
    }
  });

  test('openid-connect: TLS to the provider is verified by default; ssl_verify: false trusts any certificate', async () => {
    idp.user = 'ivan';
    const lax = (await login('tls')).at(-1)!;
    assert.equal(lax.status, 200, lax.body);
    assert.equal(lax.body, 'user=ivan');
    const strict = (await login('strict')).at(-1)!;
    assert.equal(strict.status, 502, strict.body);
    assert.equal((JSON.parse(strict.body) as { error: string }).error, 'provider_error');

    const token = await idp.mint({ sub: 'judy' });
    const viaLax = await request(`${base}/jwks-lax/x`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(viaLax.status, 200, viaLax.body);
    assert.equal(viaLax.body, 'user=judy');
    const viaStrict = await request(`${base}/jwks-strict/x`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(viaStrict.status, 502, viaStrict.body);
    assert.equal(viaStrict.headers['www-authenticate'], undefined);
  });
});
