/**
 * The review's HTTP/1.1 front findings (../shared/reports/security-review.md,
 * F-1, F-9, F-10, F-11), each replayed against a real spawned gateway: the
 * default lean front and `listener.http1_server: node`, both forwarding to a
 * recording origin.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import {
  captureUpstream,
  rawConnect,
  readResponse,
  spawnDataPlane,
  type CaptureUpstream,
  type RawResponse,
  type SpawnedGateway,
} from './raw-http.js';

const gatewayYaml = (port: number) => `
routes:
  - { name: all, match: { path: /* }, policy: proxy }
policies:
  - name: proxy
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;

let origin: CaptureUpstream;
const fronts: Record<'lean' | 'node', SpawnedGateway | undefined> = { lean: undefined, node: undefined };

before(async () => {
  origin = await captureUpstream();
  [fronts.lean, fronts.node] = await Promise.all([
    spawnDataPlane(gatewayYaml(origin.port)),
    spawnDataPlane(gatewayYaml(origin.port), '', 'http1_server: node'),
  ]);
});

after(async () => {
  await Promise.all([fronts.lean?.stop(), fronts.node?.stop()]);
  origin?.close();
});

/** Writes `data` on `socket` and reads one answer. */
async function send(socket: Socket, data: string): Promise<RawResponse> {
  const answer = readResponse(socket);
  socket.write(Buffer.from(data, 'latin1'));
  return answer;
}

/** One request on a fresh connection: its answer, and what reached the origin meanwhile. */
async function once(
  port: number,
  data: string,
): Promise<{ answer: RawResponse; seen: CaptureUpstream['seen'] }> {
  const before = origin.seen.length;
  const socket = await rawConnect(port);
  try {
    const answer = await send(socket, data);
    return { answer, seen: origin.seen.slice(before) };
  } finally {
    socket.destroy();
  }
}

const ATTACK =
  'POST /attacker?capture= HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' +
  '5\r\nhello\r\n0\r\nX-Injected: from-trailer\r\nAuthorization: Bearer ATTACKER\r\n\r\n';
const VICTIM = 'GET /victim/private HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer VICTIM\r\n\r\n';

for (const front of ['lean', 'node'] as const) {
  test(`F-1: a chunked request's trailers and URL never reach the next request on the connection (${front} front, trailer-leak.mjs)`, async () => {
    const before = origin.seen.length;
    const socket = await rawConnect(fronts[front]!.port);
    try {
      assert.equal((await send(socket, ATTACK)).status, 200);
      assert.equal((await send(socket, VICTIM)).status, 200);
    } finally {
      socket.destroy();
    }
    const [attack, victim] = origin.seen.slice(before);
    assert.equal(attack?.target, '/attacker?capture=');
    assert.equal(attack.body, 'hello');
    assert.equal(attack.headers['x-injected'], undefined, 'request trailers are not relayed as fields');
    assert.equal(victim?.method, 'GET');
    assert.equal(victim.target, '/victim/private');
    assert.equal(victim.headers.authorization, 'Bearer VICTIM');
    assert.equal(victim.headers['x-injected'], undefined);
  });

  test(`F-1: trailers followed by a pipelined long head (flushed in pieces) stay out of it (${front} front)`, async () => {
    // 40 fields: llhttp hands a head of more than 32 fields over in pieces (kOnHeaders) before it completes.
    const fields = Array.from({ length: 40 }, (_, i) => `X-F${i}: ${i}\r\n`).join('');
    const next = `GET /second?q=1 HTTP/1.1\r\nHost: x\r\n${fields}\r\n`;
    const before = origin.seen.length;
    const socket = await rawConnect(fronts[front]!.port);
    try {
      const first = readResponse(socket);
      socket.write(ATTACK + next);
      assert.equal((await first).status, 200);
      assert.equal((await readResponse(socket)).status, 200);
    } finally {
      socket.destroy();
    }
    // node:http hands pipelined requests over at once: the GET may reach the origin first.
    const seen = origin.seen.slice(before);
    assert.deepEqual(seen.map((s) => s.target).sort(), ['/attacker?capture=', '/second?q=1']);
    const second = seen.find((s) => s.method === 'GET')!;
    assert.equal(second.headers.authorization, undefined);
    assert.equal(second.headers['x-injected'], undefined);
    assert.equal(second.headers['x-f39'], '39');
  });

  test(`F-9: QUERY reaches the origin as QUERY with its body (${front} front)`, async () => {
    const { answer, seen } = await once(
      fronts[front]!.port,
      'QUERY /q9 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello',
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(
      seen.map((s) => [s.method, s.target, s.body]),
      [['QUERY', '/q9', 'hello']],
    );
  });
}
