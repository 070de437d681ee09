import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:https';
import { join } from 'node:path';
import { tempDir } from '../support/temp-dir.js';
import { basic, startAdmin } from './harness.js';

/** A throwaway self-signed certificate; undefined when openssl is not installed. */
function selfSigned(dir: string): { cert: string; key: string } | undefined {
  const cert = join(dir, 'admin.crt');
  const key = join(dir, 'admin.key');
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'].concat([
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ]),
      { stdio: 'ignore' },
    );
  } catch {
    return undefined;
  }
  return { cert, key };
}

function get(url: string, authorization?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = authorization === undefined ? {} : { authorization };
    request(url, { rejectUnauthorized: false, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

test('admin tls: admin.tls serves the Admin API over HTTPS with the same auth rules', async (t) => {
  const dir = tempDir();
  const pair = selfSigned(dir.path);
  if (pair === undefined) {
    dir.remove();
    t.skip('openssl is not installed');
    return;
  }
  const h = await startAdmin({ admin: `tls: { cert_path: "${pair.cert}", key_path: "${pair.key}" }` });
  try {
    assert.match(h.url, /^https:\/\//);
    assert.equal(await get(`${h.url}/healthz`), 200);
    assert.equal(await get(`${h.url}/api/status`), 401);
    assert.equal(await get(`${h.url}/api/status`, basic()), 200);
  } finally {
    await h.stop();
    dir.remove();
  }
});
