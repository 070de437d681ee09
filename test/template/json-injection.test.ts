import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { request } from '../support/http.js';

/**
 * Review L4: set-vars → mocking with a JSON `response_example`, and a
 * body-transformer JSON template, fed by request data that tries to close
 * the string and add a key.
 */
const YAML = `
routes:
  - { name: sv, match: { path: /sv }, policy: sv }
  - { name: bt, match: { path: /bt }, policy: bt }
  - { name: text, match: { path: /text }, policy: text }
policies:
  - name: sv
    nodes:
      - { id: listener, type: listener }
      - { id: vars, type: set-vars, config: { vars: { greeting: "hi {{request.headers.x-name}}" } } }
      - id: m
        type: mocking
        config:
          content_type: application/json
          response_example: '{"g": "{{message.greeting}}", "arg": "$arg_x", "n": {{request.query.n}}}'
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: vars.in }
      - { from: vars.success, to: m.in }
      - { from: m.success, to: client.in }
  - name: bt
    nodes:
      - { id: listener, type: listener }
      - id: t
        type: body-transformer
        config: { request: { template: '{"who": "{{body.name}}", "tag": "$http_x_tag", "age": {{body.age}}}' } }
      - { id: m, type: mocking, config: { response_example: '{{request.body}}', content_type: application/json } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: t.in }
      - { from: t.success, to: m.in }
      - { from: m.success, to: client.in }
  - name: text
    nodes:
      - { id: listener, type: listener }
      - { id: m, type: mocking, config: { response_example: 'name={{request.headers.x-name}}', content_type: text/plain } }
      - { id: client, type: client }
    edges:
      - { from: listener.out, to: m.in }
      - { from: m.success, to: client.in }
`;

const INJECT_HEADER = 'bob", "admin": true, "z": "';
const INJECT_QUERY = encodeURIComponent('"},"injected":1,"z":"');

describe('templates: JSON injection (review L4)', () => {
  let gw: RunningGateway;
  before(async () => {
    gw = await startGateway(YAML);
  });
  after(() => gw.stop());

  test('L4: a header and a query value cannot add keys to a JSON response_example', async () => {
    const res = await request(`${gw.url}/sv?x=${INJECT_QUERY}&n=${encodeURIComponent('1, "admin": true')}`, {
      headers: { 'x-name': INJECT_HEADER },
    });
    assert.equal(res.status, 200);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['arg', 'g', 'n']);
    assert.equal(body['g'], `hi ${INJECT_HEADER}`);
    assert.equal(body['arg'], '"},"injected":1,"z":"');
    assert.equal(body['n'], '1, "admin": true', 'a bare value that is not one JSON value is quoted');
  });

  test('L4: ordinary values render as before: strings as is, a number bare', async () => {
    const res = await request(`${gw.url}/sv?x=plain&n=42`, { headers: { 'x-name': 'ada' } });
    assert.deepEqual(JSON.parse(res.body), { g: 'hi ada', arg: 'plain', n: 42 });
  });

  test('L4: body data and a header cannot add keys to a body-transformer JSON template', async () => {
    const res = await request(`${gw.url}/bt`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tag': 't", "admin": true, "y": "' },
      body: JSON.stringify({ name: 'eve", "admin": true, "x": "', age: 30 }),
    });
    assert.equal(res.status, 200);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['age', 'tag', 'who']);
    assert.equal(body['who'], 'eve", "admin": true, "x": "');
    assert.equal(body['age'], 30);
  });

  test('L4: a template that is not JSON substitutes the value unchanged', async () => {
    const res = await request(`${gw.url}/text`, { headers: { 'x-name': INJECT_HEADER } });
    assert.equal(res.body, `name=${INJECT_HEADER}`);
  });
});
