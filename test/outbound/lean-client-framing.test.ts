/**
 * The lean upstream client's response framing against a real gateway process (security review 3,
 * F-2 and F-14, with the review's reproductions): bytes after a complete answer are never a next
 * answer, never reach this client or the next one, and close that upstream connection; a status
 * below 100 fails the request at once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rawConnect, readResponse, spawnDataPlane, type SpawnedGateway } from '../server/raw-http.js';
import { SMUGGLED_HEADERS } from './bad-origin-modes.js';
import { ask, startBadOrigin, type BadOrigin } from './bad-origin.js';

/** Long, so an answer that waits for it is told apart from one that fails at once. */
const TIMEOUT_MS = 10_000;

let origin: BadOrigin;
let gw: SpawnedGateway;

before(async () => {
  origin = await startBadOrigin();
  // The default upstream.http1_client: the lean client.
  gw = await spawnDataPlane(`
routes:
  - { name: all, match: { path: /* }, policy: up }
policies:
  - name: up
    nodes:
      - { id: in, type: listener }
      - id: up
        type: upstream
        config: { targets: [{ host: 127.0.0.1, port: ${origin.port} }], timeout_ms: ${TIMEOUT_MS} }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`);
});

after(async () => {
  await gw.stop();
  await origin.close();
});

function smuggled(headers: Record<string, string>): string[] {
  return SMUGGLED_HEADERS.filter((name) => name !== 'x-bad' && headers[name] !== undefined);
}

/** The follow-up `/ok` from another client: the origin's own answer, on a connection opened after `before`. */
async function nextClientIsServed(connectionsBefore: number): Promise<void> {
  const next = await ask(gw.port, 'GET', '/ok', { headers: 'Cookie: sid=victim\r\n' });
  assert.equal(next.status, 200);
  assert.deepEqual(smuggled(next.headers), []);
  const c = Number(/^GOOD c=(\d+) n=(\d+)$/.exec(next.body)?.[1]);
  assert.ok(c > connectionsBefore, `the follow-up went on a new upstream connection (${next.body})`);
}

test('F-2: bytes after a chunked answer are not a second answer: the client gets 200 hello, not POISON or a 302 with Set-Cookie', async () => {
  for (const mode of ['chunked-extra', 'chunked-extra-setcookie', 'cl-headsplit-extra']) {
    const answer = await ask(gw.port, 'GET', `/bad/${mode}`);
    const used = origin.connections;
    await origin.settle(3_000);
    assert.equal(answer.status, 200, mode);
    assert.equal(answer.body, 'hello', mode);
    assert.deepEqual(smuggled(answer.headers), [], mode);
    assert.equal(answer.trailing, '', mode);
    await nextClientIsServed(used);
  }
});

test('F-2: a 60 KB chunked body with a response after its last chunk in the same read is relayed without it', async () => {
  const answer = await ask(gw.port, 'GET', '/bad/chunked-big-extra');
  const used = origin.connections;
  await origin.settle(3_000);
  assert.equal(answer.status, 200);
  assert.equal(answer.body, 'a'.repeat(30_000) + 'b'.repeat(30_000));
  assert.equal(answer.trailing, '');
  await nextClientIsServed(used);
});

test('F-2: poison-partial-head, then a victim asks /ok: the victim gets 200 GOOD, no Location, no Set-Cookie', async () => {
  const attacker = await ask(gw.port, 'GET', '/bad/poison-partial-head');
  const used = origin.connections;
  await origin.settle(3_000);
  assert.equal(attacker.status, 200);
  assert.equal(attacker.body, 'hello');
  const victim = await ask(gw.port, 'GET', '/ok', { headers: 'Cookie: sid=victim\r\n' });
  assert.equal(victim.status, 200);
  assert.match(victim.body, /^GOOD c=\d+ n=1$/);
  assert.equal(victim.headers['location'], undefined);
  assert.equal(victim.headers['set-cookie'], undefined);
  assert.equal(victim.headers['x-swallow'], undefined);
  assert.ok(Number(/c=(\d+)/.exec(victim.body)?.[1]) > used, victim.body);
});

test('F-2: under Content-Length 60000 the client gets 60000 bytes, and its next request on the same connection its own answer', async () => {
  const socket = await rawConnect(gw.port);
  try {
    let answer = readResponse(socket);
    socket.write('GET /bad/cl-big-headsplit-extra HTTP/1.1\r\nHost: gw\r\n\r\n');
    const big = await answer;
    assert.equal(big.status, 200);
    assert.equal(big.body.length, 60_000);
    assert.equal(big.headers['x-injected'], undefined);
    await origin.settle(3_000);
    answer = readResponse(socket);
    socket.write('GET /ok HTTP/1.1\r\nHost: gw\r\n\r\n');
    const next = await answer;
    assert.equal(next.status, 200);
    assert.match(next.body, /^GOOD c=\d+ n=\d+$/);
    assert.equal(next.headers['x-injected'], undefined);
  } finally {
    socket.destroy();
  }
});

test('F-2: an idle pooled connection that receives bytes is closed; the next request gets its own answer', async () => {
  for (const mode of ['cl-extra-idle', 'chunked-extra-idle', 'cl-extra-idle-partial-head', '204-idle']) {
    const answer = await ask(gw.port, 'GET', `/bad/${mode}`);
    const used = origin.connections;
    assert.equal(answer.status, mode === '204-idle' ? 204 : 200, mode);
    // Rejects unless the gateway closes the connection the bytes went to.
    await origin.settle(3_000);
    await nextClientIsServed(used);
  }
});

test('F-2: answers without a body (204, 304, HEAD) followed by bytes: the answer is delivered and the connection dropped', async () => {
  for (const [mode, method, status] of [
    ['204-then-bytes', 'GET', 204],
    ['204-headsplit-poison', 'GET', 204],
    ['304-cl-body', 'GET', 304],
    ['head-with-poison', 'HEAD', 200],
    ['head-headsplit-poison', 'HEAD', 200],
  ] as const) {
    const answer = await ask(gw.port, method, `/bad/${mode}`);
    const used = origin.connections;
    await origin.settle(3_000);
    assert.equal(answer.status, status, mode);
    assert.equal(answer.body, '', mode);
    assert.equal(answer.trailing, '', mode);
    assert.deepEqual(smuggled(answer.headers), [], mode);
    await nextClientIsServed(used);
  }
});

test('F-14: a status line below 100 (HTTP/1.1 099 Weird) is a 502 at once, not a 504 after timeout_ms', async () => {
  for (const mode of ['status-099', 'status-000']) {
    const started = Date.now();
    const answer = await ask(gw.port, 'GET', `/bad/${mode}`);
    const elapsed = Date.now() - started;
    const used = origin.connections;
    assert.equal(answer.status, 502, mode);
    assert.equal((JSON.parse(answer.body) as { code: string }).code, 'UPSTREAM_CONNECTION_ERROR', mode);
    assert.ok(elapsed < TIMEOUT_MS / 2, `${mode}: answered after ${elapsed} ms`);
    await nextClientIsServed(used);
  }
});
