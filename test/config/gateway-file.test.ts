import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeGatewayFile, readGatewayFile, readGatewayFileAsync } from '../../src/config/gateway-file.js';
import { parseGatewayConfig } from '../../src/config/gateway.js';
import {
  OFF_THREAD_CHUNK_ITEMS,
  OFF_THREAD_PARSE_BYTES,
  parseGatewayConfigOffThread,
} from '../../src/config/parse-off-thread.js';
import { ConfigRejected } from '../../src/config/schema-validate.js';
import { scaleConfigYaml } from '../../bench/config-scale-config.js';
import { forcedMinorCollections } from '../support/forced-collections.js';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-gateway-file-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a reload reads gateway.yaml into shared memory, byte for byte, as the startup read does', async () => {
  const path = join(dir, 'shared.yaml');
  // A byte-order mark, and characters of two, three and four bytes.
  const text = '\uFEFFroutes: []\n# café – 雪 🚦\n';
  writeFileSync(path, text);
  const bytes = await readGatewayFileAsync(path);
  assert.ok(bytes.buffer instanceof SharedArrayBuffer, 'the worker gets the bytes without a copy');
  assert.ok(bytes.equals(readGatewayFile(path)));
  assert.equal(decodeGatewayFile(bytes), text);
});

test('an unreadable gateway.yaml is refused with its path, on both reads', async () => {
  const path = join(dir, 'missing.yaml');
  await assert.rejects(readGatewayFileAsync(path), (err: unknown) => {
    assert.ok(err instanceof ConfigRejected);
    assert.match(err.issues[0]!.message, /cannot read .*missing\.yaml/);
    return true;
  });
  assert.throws(() => readGatewayFile(path), ConfigRejected);
});

test('a large gateway.yaml with non-ASCII text parses from its bytes in the worker as from its text', async () => {
  const text = scaleConfigYaml(800, { upstreamPort: 9 }).replace('"v1 p0 ', '"v1 café 雪 🚦 p0 ');
  assert.ok(Buffer.byteLength(text) > OFF_THREAD_PARSE_BYTES, 'large enough for the worker');
  const path = join(dir, 'large.yaml');
  writeFileSync(path, text);
  const bytes = await readGatewayFileAsync(path);
  let fromBytes: Awaited<ReturnType<typeof parseGatewayConfigOffThread>> | undefined;
  // Each piece the worker sends is collected out of the young generation before the next one.
  const forced = await forcedMinorCollections(async () => {
    fromBytes = await parseGatewayConfigOffThread(bytes);
  });
  assert.ok(forced >= (2 * 800) / OFF_THREAD_CHUNK_ITEMS, `${forced} collections`);
  assert.ok(fromBytes !== undefined);
  assert.deepStrictEqual(fromBytes, parseGatewayConfig(text));
  assert.match(JSON.stringify(fromBytes.policies[0]), /v1 café 雪 🚦 p0/);
});

test('a small gateway.yaml given as bytes is parsed on the main thread, with the same errors', async () => {
  const bytes = Buffer.from('routes: 5\n');
  assert.ok(bytes.length < OFF_THREAD_PARSE_BYTES);
  await assert.rejects(parseGatewayConfigOffThread(bytes), (err: unknown) => {
    assert.ok(err instanceof ConfigRejected);
    assert.equal(err.issues[0]!.path, 'routes');
    return true;
  });
});
