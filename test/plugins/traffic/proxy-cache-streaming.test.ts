/**
 * proxy-cache stores a streamed response while relaying it (docs/plugins/proxy-cache.md): the
 * upstream keeps streaming, the client gets the first bytes before the origin has finished, and
 * the next request is a hit with the same body; local and Redis backends.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, test } from 'node:test';
import { closeAllStores } from '../../../src/stores/index.js';
import { read, startAdmin, type AdminHarness } from '../../admin/harness.js';
import { request } from '../../support/http.js';
import { gate, startOrigin, type Origin } from '../../support/origins.js';
import { skipWithoutRedis, startRedis, type RedisServer } from '../../support/redis.js';

const CHUNK = Buffer.alloc(64 * 1024, 'x');
const CHUNKS = 8;
const skipRedis = skipWithoutRedis();
let origin: Origin;
let redis: RedisServer | undefined;
let held = gate();
const harnesses: AdminHarness[] = [];

before(async () => {
  // /big: one chunk, then the rest once the test releases the gate; /huge: over the cache cap.
  origin = await startOrigin(async (req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunks = req.url?.startsWith('/huge') === true ? CHUNKS * 4 : CHUNKS;
    res.write(CHUNK);
    if (req.url?.includes('held') === true) await held.wait;
    for (let i = 1; i < chunks; i++) res.write(CHUNK);
    res.end();
  });
  if (skipRedis === false) redis = await startRedis();
});

after(async () => {
  held.release();
  await Promise.all(harnesses.map((h) => h.stop()));
  await closeAllStores();
  await origin.close();
  await redis?.stop();
});

const policy = (backend: string) => `
  - name: cached
    nodes:
      - { id: listener, type: listener }
      - { id: lookup, type: proxy-cache, config: { phase: lookup, id: files, ${backend} } }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }] } }
      - { id: store, type: proxy-cache, config: { phase: store, id: files, ${backend}, max_object_bytes: ${CHUNK.length * CHUNKS} } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: lookup.in }
      - { from: lookup.success, to: up.in }
      - { from: lookup.hit, to: client.in }
      - { from: up.success, to: store.in }
      - { from: store.success, to: client.in }
      - { from: store.hit, to: client.in }`;

async function gateway(backend: string, stores = ''): Promise<AdminHarness> {
  const h = await startAdmin({
    gatewayYaml: `${stores}routes:\n  - { name: files, match: { path: /* }, policy: cached }\npolicies:${policy(backend)}\n`,
  });
  harnesses.push(h);
  return h;
}

/** GET `url`: the first chunk's arrival is reported through `onFirst`; resolves with the whole body. */
function fetchStreaming(
  url: string,
  onFirst: () => void,
): Promise<{ status: number; cache: unknown; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        if (chunks.length === 0) onFirst();
        chunks.push(c);
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          cache: res.headers['switchyard-cache-status'],
          body: Buffer.concat(chunks),
        }),
      );
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

async function streamsAndCaches(h: AdminHarness): Promise<void> {
  const validated = await read(
    await h.call(
      'POST',
      '/api/policies/validate',
      await (await h.call('GET', '/api/policies/cached')).json(),
    ),
  );
  assert.deepEqual(
    (validated.body as { buffering: unknown[] }).buffering,
    [],
    'the store half lets its upstream stream',
  );

  held = gate();
  let firstSeen = false;
  const pending = fetchStreaming(`${h.data}/big?held`, () => {
    firstSeen = true;
    held.release();
  });
  // A gateway that buffered would wait for the whole body, which the origin holds back: bounded here.
  let timer: NodeJS.Timeout | undefined;
  const miss = await Promise.race([
    pending,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no byte arrived: the response was buffered')), 30_000);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.ok(firstSeen, 'the first bytes reached the client while the origin was still holding the rest');
  assert.equal(miss.status, 200);
  assert.equal(miss.cache, 'MISS');
  assert.equal(miss.body.length, CHUNK.length * CHUNKS);

  const before = origin.requests.length;
  const hit = await request(`${h.data}/big?held`);
  assert.equal(hit.headers['switchyard-cache-status'], 'HIT');
  assert.equal(hit.body.length, CHUNK.length * CHUNKS);
  assert.equal(origin.requests.length, before, 'the hit did not reach the origin');

  const huge = await request(`${h.data}/huge`);
  assert.equal(huge.body.length, CHUNK.length * CHUNKS * 4, 'over the cap: relayed whole');
  assert.equal(
    (await request(`${h.data}/huge`)).headers['switchyard-cache-status'],
    'MISS',
    'and not stored',
  );
}

test('proxy-cache streaming (local): relayed as it arrives, stored once complete, over the cap relayed and not stored', async () => {
  await streamsAndCaches(await gateway('policy: local'));
});

test('proxy-cache streaming (redis): the same through a real Redis store', { skip: skipRedis }, async () => {
  const stores = `stores:\n  - { name: main, type: redis, url: "${redis?.url ?? ''}" }\n`;
  await streamsAndCaches(await gateway('policy: redis, store: main', stores));
});
