import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FilesystemStorage } from '../../src/acme/fs-storage.js';
import type { AcmeStorage } from '../../src/acme/storage.js';
import { StoreStorage } from '../../src/acme/store-storage.js';
import type { StoreSet } from '../../src/stores/index.js';
import { closeAllStores } from '../../src/stores/index.js';
import { skipWithoutRedis, startRedis, testStores, type RedisServer } from '../support/redis.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const CERT = {
  cert: 'CHAIN',
  key: '-----BEGIN PRIVATE KEY-----\nsecret\n',
  issued_at: '2026-01-01T00:00:00.000Z',
};

function leaseContract(make: () => AcmeStorage) {
  test('a lease is exclusive until released by its owner, and an expired lease is taken over', async () => {
    const storage = make();
    assert.equal(await storage.acquireLease('gw.test', 'a', 60_000), true);
    assert.equal(await storage.acquireLease('gw.test', 'b', 60_000), false, 'held by a');
    await storage.releaseLease('gw.test', 'b');
    assert.equal(await storage.acquireLease('gw.test', 'b', 60_000), false, 'only the owner releases');
    await storage.releaseLease('gw.test', 'a');
    assert.equal(await storage.acquireLease('gw.test', 'b', 1), true);
    // The 1 ms lease lapses: the next owner gets it without a release.
    await waitFor(() => storage.acquireLease('gw.test', 'c', 60_000), {
      what: 'an expired lease to be taken over',
    });
  });

  test('certificates and the account round-trip', async () => {
    const storage = make();
    assert.equal(await storage.loadCert('a.test,b.test'), undefined);
    await storage.saveCert('a.test,b.test', CERT);
    assert.deepEqual(await storage.loadCert('a.test,b.test'), CERT);
    await storage.saveAccount({
      key: 'ACCOUNT KEY',
      directory_url: 'https://ca.test/dir',
      url: 'https://ca.test/acct/1',
    });
    assert.equal((await storage.loadAccount())?.key, 'ACCOUNT KEY');
  });
}

describe('acme storage: filesystem', () => {
  const dir = tempDir('switchyard-acme-fs-');
  after(() => dir.remove());
  leaseContract(() => new FilesystemStorage(dir.path));

  test('key files are 0600 and no temp file is left behind', async () => {
    const storage = new FilesystemStorage(join(dir.path, 'modes'));
    await storage.saveCert('gw.test', CERT);
    await storage.saveAccount({ key: 'K', directory_url: 'https://ca.test/dir' });
    assert.equal(statSync(join(dir.path, 'modes', 'certs', 'gw.test', 'key.pem')).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir.path, 'modes', 'account.json')).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(join(dir.path, 'modes', 'certs', 'gw.test')).sort(), [
      'chain.pem',
      'key.pem',
      'meta.json',
    ]);
  });
});

describe('acme storage: redis store', { skip: skipWithoutRedis() }, () => {
  let redis: RedisServer;
  let stores: StoreSet;
  before(async () => {
    redis = await startRedis();
    stores = testStores({ r: redis.url });
  });
  after(async () => {
    stores.release();
    await closeAllStores();
    await redis.stop();
  });
  leaseContract(() => new StoreStorage('r', 'storage secret', () => stores));

  test('private keys are sealed at rest and open only with the same encryption key', async () => {
    const storage = new StoreStorage('r', 'storage secret', () => stores);
    await storage.saveCert('sealed.test', CERT);
    const raw = await stores.get('r')?.get('acme:cert:{sealed.test}');
    assert.ok(raw !== null && raw !== undefined);
    assert.ok(!raw.includes('secret'), 'the key is not stored in clear');
    assert.ok(raw.includes('CHAIN'), 'the chain is');
    const other = new StoreStorage('r', 'another secret', () => stores);
    await assert.rejects(other.loadCert('sealed.test'), /encryption_key/);
  });
});
