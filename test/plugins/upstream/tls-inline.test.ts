import assert from 'node:assert/strict';
import type { TLSSocket } from 'node:tls';
import { after, before, test } from 'node:test';
import { ConfigError } from '../../../src/core/plugin.js';
import { createAuthority, type Authority, type CertPair } from '../../support/certs.js';
import { echo, startOrigin, type Origin } from '../../support/origins.js';
import { requestContext } from '../../support/plugin-env.js';
import { tempDir } from '../../support/temp-dir.js';
import { failsWith, runOk } from '../../support/node-run.js';
import { answeredBy, closeAll, createUpstream } from './helpers.js';

// issue 32 (BackendTLSPolicy): tls.ca_pem and tls.server_name on the upstream node. The origin's
// certificate names only backend.internal, never the address the gateway connects to.
let dir: ReturnType<typeof tempDir>;
let ca: Authority;
let leaf: CertPair;
let origin: Origin;
before(async () => {
  dir = tempDir('switchyard-tls-inline-');
  ca = createAuthority(dir.path, 'inline');
  leaf = ca.issue('backend', { cn: 'backend.internal', dns: ['backend.internal'] });
  origin = await startOrigin(echo('named'), {
    name: 'named',
    https: { key: leaf.keyPem, cert: leaf.certPem },
  });
});
after(async () => {
  await closeAll();
  await origin.close();
  dir.remove();
});

test('issue 32: tls.ca_pem + tls.server_name verify a certificate for another name than the target address', async () => {
  const { node } = createUpstream({
    targets: [origin.target],
    tls: { ca_pem: ca.certPem, server_name: 'backend.internal' },
  });
  const ctx = requestContext();
  await runOk(node, ctx);
  assert.equal(answeredBy(ctx), 'named');
});

test('issue 32: tls.server_name is also the SNI the origin sees', async () => {
  const seen: (string | false)[] = [];
  const sni = await startOrigin(
    (req, res) => {
      seen.push((req.socket as TLSSocket).servername ?? false);
      res.end('ok');
    },
    { name: 'sni', https: { key: leaf.keyPem, cert: leaf.certPem } },
  );
  try {
    const { node } = createUpstream({
      targets: [sni.target],
      tls: { ca_pem: ca.certPem, server_name: 'backend.internal' },
    });
    await runOk(node, requestContext());
    assert.deepEqual(seen, ['backend.internal']);
  } finally {
    await sni.close();
  }
});

test('issue 32: without tls.server_name the name checked is the target address → 502', async () => {
  const { node } = createUpstream({ targets: [origin.target], tls: { ca_pem: ca.certPem } });
  const err = await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
  assert.match(err.message, /TLS|certificate|altnames|match/i);
});

test('issue 32: a wrong tls.server_name → 502, the certificate does not match', async () => {
  const { node } = createUpstream({
    targets: [origin.target],
    tls: { ca_pem: ca.certPem, server_name: 'other.internal' },
  });
  await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
});

test('issue 32: a CA in tls.ca_pem that did not sign the certificate → 502', async () => {
  const other = createAuthority(dir.path, 'other');
  const { node } = createUpstream({
    targets: [origin.target],
    tls: { ca_pem: other.certPem, server_name: 'backend.internal' },
  });
  await failsWith(node, requestContext(), 'UPSTREAM_CONNECTION_ERROR', 502);
});

test('issue 32: schema errors name the key (tls.ca_pem not PEM, with ca_cert_path, with ssl_verify false; tls object with scheme http)', () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ tls: { ca_pem: 'not a certificate' } }, 'tls.ca_pem'],
    [{ tls: { ca_pem: ca.certPem }, ca_cert_path: ca.cert }, 'tls.ca_pem'],
    [{ tls: { ca_pem: ca.certPem }, ssl_verify: false }, 'tls.ca_pem'],
    [{ tls: { server_name: 'x' }, scheme: 'http' }, 'tls'],
  ];
  for (const [extra, key] of cases) {
    assert.throws(
      () => createUpstream({ targets: [origin.target], ...extra }),
      (err: unknown) => err instanceof ConfigError && err.path === key,
      `${JSON.stringify(extra).slice(0, 60)} → ${key}`,
    );
  }
});
