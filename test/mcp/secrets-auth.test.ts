import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRedaction } from '../../src/debug/redaction.js';
import { bearerVerifier, originAllowed } from '../../src/admin/mcp/auth.js';
import {
  maskSecrets,
  restoreSecrets,
  scrubSecretLiterals,
  secretLiterals,
} from '../../src/admin/mcp/secrets.js';

const redaction = createRedaction({
  redact_headers: [],
  redact_query_params: [],
  redact_message_keys: ['pin'],
});

test('mcp secrets: secret keys are redacted, placeholders and address keys are shown', () => {
  const masked = maskSecrets(
    {
      name: 'alice',
      credentials: { 'key-auth': { key: 'k-123' }, 'basic-auth': { username: 'alice', password: '${PW}' } },
      config: {
        client_secret: 'literal',
        token_endpoint: 'https://idp/token',
        session: { secret: '${S:-fallback-literal}' },
        pin: '1234',
        timeout_ms: 5,
      },
    },
    redaction,
  );
  assert.deepEqual(masked, {
    name: 'alice',
    credentials: {
      'key-auth': { key: '<redacted>' },
      'basic-auth': { username: '<redacted>', password: '${PW}' },
    },
    config: {
      client_secret: '<redacted>',
      token_endpoint: 'https://idp/token',
      // A default after :- may itself be a literal secret.
      session: { secret: '<redacted>' },
      pin: '<redacted>',
      timeout_ms: 5,
    },
  });
});

test('mcp secrets: markers sent back take the stored value; a marker with nothing stored is reported', () => {
  const stored = { url: 'redis://x', password: 'p1', tls: { keys: ['a', 'b'] } };
  const back = restoreSecrets(
    { url: 'redis://y', password: '<redacted>', tls: { keys: ['<redacted>', 'c'] } },
    stored,
  );
  assert.deepEqual(back, {
    value: { url: 'redis://y', password: 'p1', tls: { keys: ['a', 'c'] } },
    missing: [],
  });
  assert.deepEqual(restoreSecrets({ password: '<redacted>' }, undefined).missing, ['password']);
});

test('mcp auth: bearer tokens match exactly; a token without scope reads', () => {
  const verify = bearerVerifier([
    { token: 'read-token-0123456789', name: 'r' },
    { token: 'write-token-0123456789', scope: 'write' },
  ]);
  assert.deepEqual(verify('Bearer read-token-0123456789'), { scope: 'read', name: 'r' });
  assert.deepEqual(verify('bearer write-token-0123456789'), { scope: 'write', name: undefined });
  for (const header of [
    undefined,
    '',
    'Bearer',
    'Bearer read-token-012345678',
    'Basic read-token-0123456789',
  ])
    assert.equal(verify(header), undefined, String(header));
});

test('mcp auth: Origin must be same-origin with the listener (scheme, port, loopback name) or listed', () => {
  const listener = { scheme: 'http' as const, bind: '127.0.0.1', port: 9090 };
  const host = { host: '127.0.0.1:9090' };
  assert.equal(originAllowed(host, listener, []), true);
  for (const own of ['http://127.0.0.1:9090', 'http://localhost:9090', 'http://[::1]:9090'])
    assert.equal(originAllowed({ ...host, origin: own }, listener, []), true, own);
  assert.equal(originAllowed({ ...host, origin: 'http://127.0.0.1:9091' }, listener, []), false);
  assert.equal(originAllowed({ ...host, origin: 'null' }, listener, []), false);
  // L3: a rebinding page controls Host; it must not vouch for its own Origin.
  const rebound = { host: 'evil.example:9090', origin: 'http://evil.example:9090' };
  assert.equal(originAllowed(rebound, listener, []), false);
  // The scheme must match the listener.
  assert.equal(originAllowed({ ...host, origin: 'https://127.0.0.1:9090' }, listener, []), false);
  const tls = { scheme: 'https' as const, bind: '10.0.0.5', port: 443 };
  assert.equal(originAllowed({ origin: 'https://10.0.0.5' }, tls, []), true);
  assert.equal(originAllowed({ origin: 'https://localhost' }, tls, []), false);
  assert.equal(
    originAllowed({ ...host, origin: 'https://ui.example' }, listener, ['https://ui.example']),
    true,
  );
  assert.equal(
    originAllowed({ ...host, origin: 'https://ui.example' }, listener, ['https://ui.example/']),
    true,
  );
  assert.equal(
    originAllowed({ ...host, origin: 'http://ui.example' }, listener, ['https://ui.example']),
    false,
  );
});

test('mcp secrets M6: URL credentials, key lists and configured header values are masked; references stay', () => {
  const masked = maskSecrets({
    stores: [
      {
        url: 'redis://:URLPW@h:6379/0',
        url2: 'rediss://u:${PW}@h',
        hook: 'https://TOKEN@git.example/x?access_token=AT&page=2',
      },
    ],
    keyed: { keys: ['INLINE'], header_name: 'x-api-key' },
    limit: { key: '$remote_addr $http_x_user', key_type: 'var' },
    rw: {
      headers: {
        set: { 'x-upstream-auth': 'Bearer B', 'x-tenant': 'acme', 'content-type': 'text/plain' },
        remove: ['x-a'],
      },
      add_headers: [
        { name: 'x-b', value: 'LIT' },
        { name: 'x-c', value: '{{request.headers.x-c}}' },
      ],
    },
    mock: { response_headers: { 'x-env': '{{env.ADMIN_PASSWORD}}', vary: 'accept' } },
  });
  assert.deepEqual(masked, {
    stores: [
      {
        url: 'redis://:<redacted>@h:6379/0',
        url2: 'rediss://u:${PW}@h',
        hook: 'https://<redacted>@git.example/x?access_token=<redacted>&page=2',
      },
    ],
    keyed: { keys: ['<redacted>'], header_name: 'x-api-key' },
    limit: { key: '$remote_addr $http_x_user', key_type: 'var' },
    rw: {
      headers: {
        set: { 'x-upstream-auth': '<redacted>', 'x-tenant': '<redacted>', 'content-type': 'text/plain' },
        remove: ['x-a'],
      },
      add_headers: [
        { name: 'x-b', value: '<redacted>' },
        { name: 'x-c', value: '{{request.headers.x-c}}' },
      ],
    },
    mock: { response_headers: { 'x-env': '{{env.ADMIN_PASSWORD}}', vary: 'accept' } },
  });
  // A masked URL sent back unchanged keeps the stored password.
  const back = restoreSecrets({ url: 'redis://:<redacted>@h:6379/0' }, { url: 'redis://:URLPW@h:6379/0' });
  assert.deepEqual(back, { value: { url: 'redis://:URLPW@h:6379/0' }, missing: [] });
  assert.deepEqual(
    restoreSecrets({ url: 'redis://:<redacted>@other' }, { url: 'redis://:URLPW@h' }).missing,
    ['url'],
  );
});

test('mcp secrets: trace scrubbing knows masked literals in their rendered form, env values included', () => {
  const config = {
    mock: { response_headers: { 'x-env': '{{env.TENANT_KEY}}', 'x-lit': 'LITERAL-VALUE' } },
    store: { url: 'redis://:${REDIS_PW}@h' },
  };
  const literals = secretLiterals(config, { TENANT_KEY: 'tenant-key-value', REDIS_PW: 'redis-pw-value' });
  const scrubbed = scrubSecretLiterals(
    { headers: { 'x-env': ['tenant-key-value'], 'x-lit': ['LITERAL-VALUE'], note: 'pw=redis-pw-value;' } },
    literals,
  );
  assert.deepEqual(scrubbed, {
    headers: { 'x-env': ['<redacted>'], 'x-lit': ['<redacted>'], note: 'pw=<redacted>;' },
  });
});
