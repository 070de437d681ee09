import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigPieces } from '../../src/cluster/config-pieces.js';
import { documentPieces } from '../../src/config/document-pieces.js';
import { checkGatewayShape } from '../../src/config/gateway.js';
import { scaleConfig } from '../../bench/config-scale-config.js';
import { forcedMinorCollections } from '../support/forced-collections.js';

const configOf = (count: number, version: string) =>
  checkGatewayShape(scaleConfig(count, { upstreamPort: 9, version }));

test('a configuration sent in pieces is rebuilt whole, and each piece leaves the young generation', async () => {
  const config = configOf(700, 'v1');
  const pieces = new ConfigPieces();
  pieces.started(1);
  const sent = [...documentPieces(structuredClone(config), 250)];
  // Top level, two empty lists to fill, three and three pieces of items, five more sections.
  assert.ok(sent.length >= 8, `${sent.length} pieces`);
  const forced = await forcedMinorCollections(async () => {
    for (const piece of sent) {
      pieces.add(2, piece);
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
  assert.ok(forced >= sent.length, `${forced} collections for ${sent.length} pieces`);
  assert.deepStrictEqual(pieces.take(2, undefined), config);
});

test('interleaved versions are kept apart, and an older version after a newer one is superseded', () => {
  const pieces = new ConfigPieces();
  pieces.started(3);
  const v4 = configOf(30, 'v4');
  const v5 = configOf(40, 'v5');
  const four = [...documentPieces(structuredClone(v4), 7)];
  const five = [...documentPieces(structuredClone(v5), 7)];
  for (let i = 0; i < Math.max(four.length, five.length); i++) {
    if (five[i] !== undefined) pieces.add(5, five[i]!);
    if (four[i] !== undefined) pieces.add(4, four[i]!);
  }
  assert.deepStrictEqual(pieces.take(5, undefined), v5);
  // Version 4's apply message came late: the worker already runs 5.
  assert.equal(pieces.take(4, undefined), undefined);
  assert.equal(pieces.take(3, v4), undefined, 'the version it started with is not applied again');
  // A document sent whole still works.
  assert.deepStrictEqual(pieces.take(6, v4), v4);
});
