import assert from 'node:assert/strict';
import { test } from 'node:test';
import { percentEncode, percentEncodePath } from '../../src/signing/percent-encode.js';

test('percent-encode: only the RFC 3986 unreserved set stays literal, per UTF-8 byte', () => {
  assert.equal(percentEncode('AZaz09-._~'), 'AZaz09-._~');
  assert.equal(percentEncode('a/../b?c#d@e f'), 'a%2F..%2Fb%3Fc%23d%40e%20f');
  assert.equal(percentEncode("!'()*+,;=:$&%"), '%21%27%28%29%2A%2B%2C%3B%3D%3A%24%26%25');
  assert.equal(percentEncode('é'), '%C3%A9');
  assert.equal(percentEncode('\uD800'), '%EF%BF%BD');
  assert.equal(percentEncodePath('/a b/%41/'), '/a%20b/%2541/');
});

test('percent-encode: a value stays one path segment whatever it holds', () => {
  for (const hostile of ['/../admin', '?x=1', '#frag', 'user@evil.example', '..%2F', '\\x']) {
    const encoded = percentEncode(hostile);
    assert.doesNotMatch(encoded, /[/?#@\\]/, hostile);
    assert.equal(decodeURIComponent(encoded), hostile);
  }
});
