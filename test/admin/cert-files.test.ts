import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAuthority } from '../support/certs.js';
import { request } from '../support/http.js';
import { tempDir } from '../support/temp-dir.js';
import { basic, startAdmin } from './harness.js';

interface Listed {
  certs: {
    source: string;
    server_name?: string;
    cert_path: string;
    subject: string;
    sans: string[];
    issuer: string;
    not_after: string;
    days_left: number;
  }[];
}

test('F29: GET /api/tls/certs lists the certificate files of system.yaml with subject, SANs and expiry', async () => {
  const dir = tempDir();
  const ca = createAuthority(dir.path);
  const shop = ca.issue('shop', { dns: ['shop.example', 'www.shop.example'], ips: ['127.0.0.1'] });
  const api = ca.issue('api', { cn: 'api.example' });
  const h = await startAdmin({
    system: `tls:
  cert_path: "${shop.cert}"
  key_path: "${shop.key}"
  sni_certs:
    - { server_name: api.example, cert_path: "${api.cert}", key_path: "${api.key}" }`,
  });
  try {
    assert.equal((await request(`${h.url}/api/tls/certs`)).status, 401, 'the list needs a login');
    const res = await request(`${h.url}/api/tls/certs`, { headers: { authorization: basic() } });
    assert.equal(res.status, 200, res.body);
    assert.ok(!res.body.includes(shop.key) && !res.body.includes('PRIVATE KEY'), 'key files are never read');
    const { certs } = JSON.parse(res.body) as Listed;
    assert.deepEqual(
      certs.map((c) => [c.source, c.server_name, c.cert_path]),
      [
        ['tls.cert_path', undefined, shop.cert],
        ['tls.sni_certs[0].cert_path', 'api.example', api.cert],
      ],
    );
    const [first, second] = certs;
    assert.equal(first?.subject, 'CN=shop');
    assert.deepEqual(first?.sans, ['DNS:shop.example', 'DNS:www.shop.example', 'IP:127.0.0.1']);
    assert.match(first?.issuer ?? '', /CN=ca test CA/);
    // The test CA issues for two days: expiry is tomorrow or the day after.
    const left = Date.parse(first?.not_after ?? '') - Date.now();
    assert.ok(left > 86_400_000 && left <= 2 * 86_400_000 + 60_000, `not_after ${first?.not_after}`);
    assert.ok(first?.days_left === 1 || first?.days_left === 2, `days_left ${first?.days_left}`);
    assert.equal(second?.subject, 'CN=api.example');
    assert.deepEqual(second?.sans, ['DNS:api.example']);
  } finally {
    await h.stop();
    dir.remove();
  }
});
