/** Unit cases of the request-path normaliser; the attacks themselves run against a gateway in path-normalisation.test.ts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normaliseTarget, PathRejected } from '../../src/server/request-path.js';

const normalised: [string, string][] = [
  ['/plain/path.json?x=1', '/plain/path.json?x=1'],
  ['/', '/'],
  ['/a/./b', '/a/b'],
  ['/a/b/../c', '/a/c'],
  ['/a/b/..', '/a/'],
  ['/a/.', '/a/'],
  ['/.', '/'],
  ['/a/..', '/'],
  ['/a//b///c', '/a/b/c'],
  ['//', '/'],
  ['/a//', '/a/'],
  ['/a/%2e%2E/b', '/b'],
  ['/a/.%2e/b', '/b'],
  ['/%61%62c', '/abc'],
  ['/%7euser/%2D%5F', '/~user/-_'],
  ['/a%2fb/%3a', '/a%2Fb/%3A'],
  ['/bad%zz/%4', '/bad%zz/%4'],
  ['/a/...', '/a/...'],
  ['/.well-known/x', '/.well-known/x'],
  ['/a/b.;c', '/a/b.;c'],
  ['/a/../b?q=/../c#f', '/b?q=/../c#f'],
];

for (const [input, output] of normalised) {
  test(`request path: ${input} normalises to ${output}`, () => {
    assert.equal(normaliseTarget(input), output);
  });
}

test('request path: a path without anything to normalise is returned as the same string', () => {
  const target = '/api/v1/users/42/orders?page=2';
  assert.equal(normaliseTarget(target), target);
});

const refused = [
  '/..',
  '/../a',
  '/a/../..',
  '/%2e%2e/a',
  '/a/..%2Fb',
  '/a/..%2fb',
  '/a/.%5C..',
  '/a/..\\b',
  '/a/..;/b',
  '/a/.;x/b',
  '/a/..%3Bx',
];

for (const input of refused) {
  test(`request path: ${input} is refused`, () => {
    assert.throws(() => normaliseTarget(input), PathRejected);
  });
}
