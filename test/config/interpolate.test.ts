import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { interpolateEnv, interpolateMarkingEmpty } from '../../src/config/interpolate.js';
import { freePort } from '../support/free-port.js';
import { spawnGateway, waitForHttp } from '../support/gateway-process.js';
import { request } from '../support/http.js';

const env = { GATEWAY_PORT: '25081', EMPTY: '' };

test('interpolation: a default may hold a placeholder of its own, one level deep, as in a shell', () => {
  assert.equal(interpolateEnv('${UPSTREAM_PORT:-${GATEWAY_PORT:-8080}}', env), '25081');
  assert.equal(interpolateEnv('${UPSTREAM_PORT:-${NOT_SET:-8080}}', env), '8080');
  assert.equal(interpolateEnv('${GATEWAY_PORT:-${NOT_SET:-8080}}', env), '25081', 'a set value wins');
  assert.equal(interpolateEnv('${A:-${EMPTY:-x}}-${B:-y}', env), 'x-y');
  assert.equal(interpolateEnv('${A:-${NOT_SET}}', env), '');
});

test('interpolation: text that is not a placeholder is left as written', () => {
  for (const text of ['${A:-$HOME}', '${A:-a$b}', 'plain ${ not closed', '$NAME', '${1BAD}']) {
    const expected = text.startsWith('${A:-') ? text.slice(5, -1) : text;
    assert.equal(interpolateEnv(text, env), expected, text);
  }
  assert.equal(interpolateEnv('${A:-{json}}', env), '{json}');
});

test('interpolation: a nested default that resolves to empty is still reported as empty (credentials never come out empty)', () => {
  const marked = interpolateMarkingEmpty('password: ${ADMIN_PW:-${EMPTY}}', env);
  assert.deepEqual(
    marked.empties.map((e) => e.source),
    ['${ADMIN_PW:-${EMPTY}}'],
  );
});

test('quick start: with GATEWAY_PORT changed and nothing else set, /api still reaches the gateway own /hello', async () => {
  const [dataPort, adminPort] = [await freePort(), await freePort()];
  const config = (name: string) => fileURLToPath(new URL(`../../config/${name}`, import.meta.url));
  const gateway = spawnGateway(
    ['--system-config', config('system.yaml'), '--gateway-config', config('gateway.yaml')],
    {
      GATEWAY_PORT: String(dataPort),
      ADMIN_PORT: String(adminPort),
      ADMIN_PASSWORD: 'quick-start-pw',
      UPSTREAM_PORT: '',
      UPSTREAM_HOST: '',
    },
  );
  try {
    await waitForHttp(`http://127.0.0.1:${dataPort}/hello`, 60_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${gateway.output()}`, { cause: err });
    });
    const res = await request(`http://127.0.0.1:${dataPort}/api/hello`);
    assert.equal(res.status, 200, res.body);
  } finally {
    await gateway.stop();
  }
});
