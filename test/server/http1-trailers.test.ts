/**
 * Trailers on HTTP/1.1 (docs/grpc.md, "Trailers on HTTP/1.1"): when the
 * client sent `TE: trailers`, the trailer fields of a chunked upstream answer
 * follow the last chunk to the client, on the lean front and on node:http;
 * without it they are dropped. HTTP/2 clients that send `te: trailers` get
 * them as a trailing HEADERS frame.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect as h2connect, type IncomingHttpHeaders } from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import { startGateway, type RunningGateway } from '../support/in-process.js';

let upstream: Server;
const fronts: Record<'lean' | 'node', RunningGateway | undefined> = { lean: undefined, node: undefined };

before(async () => {
  upstream = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-checksum, x-status' });
    const big = req.url === '/big';
    // /big streams 256 KiB in pieces before the trailers; /small is one chunk (often one read with the head).
    if (big) for (let i = 0; i < 64; i++) res.write('y'.repeat(4096));
    else res.write('hello');
    res.addTrailers({ 'x-checksum': big ? 'big-sum' : 'small-sum', 'x-status': 'done' });
    res.end();
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as AddressInfo).port;
  const gatewayYaml = `
routes:
  - { name: t, match: { path: /* }, policy: t }
policies:
  - name: t
    nodes:
      - { id: in, type: listener }
      - { id: up, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${port} }] } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: up.in }
      - { from: up.success, to: out.in }
`;
  for (const front of ['lean', 'node'] as const) {
    fronts[front] = await startGateway(gatewayYaml, {
      systemYaml: `listener: { bind: 127.0.0.1, port: 0, http1_server: ${front} }\ntimeouts: { shutdown_timeout_seconds: 2 }\n`,
    });
  }
});

after(async () => {
  await fronts.lean?.stop();
  await fronts.node?.stop();
  upstream?.close();
});

/** Sends `head` on a raw socket and returns every byte until the gateway closes. */
function raw(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.write(head);
  });
}

/** The part of a chunked answer after the body's last chunk: the trailer section. */
function trailerSection(answer: string): string {
  const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  const last = body.lastIndexOf('0\r\n');
  assert.ok(last >= 0, 'a chunked body with a last chunk');
  return body.slice(last + 3);
}

for (const front of ['lean', 'node'] as const) {
  for (const path of ['/small', '/big']) {
    test(`http1 trailers (${front} front, ${path}): TE: trailers gets the upstream's trailer fields after the last chunk`, async () => {
      const answer = await raw(
        fronts[front]!.port,
        `GET ${path} HTTP/1.1\r\nHost: t\r\nTE: trailers\r\nConnection: close\r\n\r\n`,
      );
      assert.match(answer, /^HTTP\/1\.1 200/);
      assert.match(answer, /\r\ntransfer-encoding: chunked\r\n/i);
      const trailers = trailerSection(answer);
      assert.match(trailers, new RegExp(`^x-checksum: ${path === '/big' ? 'big' : 'small'}-sum\r\n`, 'im'));
      assert.match(trailers, /^x-status: done\r\n/im);
      assert.ok(trailers.endsWith('\r\n\r\n'), 'the trailer section ends the message');
    });
  }

  test(`http1 trailers (${front} front): without TE: trailers the trailer fields are dropped`, async () => {
    const answer = await raw(
      fronts[front]!.port,
      `GET /small HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n`,
    );
    assert.match(answer, /^HTTP\/1\.1 200/);
    assert.match(answer, /hello/);
    assert.equal(trailerSection(answer), '\r\n');
    assert.doesNotMatch(answer, /x-checksum/i);
  });
}

test('http2 trailers: an HTTP/2 client that sent te: trailers gets them as trailing headers', async () => {
  const session = h2connect(`http://127.0.0.1:${fronts.lean!.port}`);
  session.on('error', () => undefined);
  try {
    const trailers = await new Promise<IncomingHttpHeaders | undefined>((resolve, reject) => {
      const stream = session.request({ ':path': '/small', te: 'trailers' });
      let got: IncomingHttpHeaders | undefined;
      stream.on('trailers', (t: IncomingHttpHeaders) => {
        got = t;
      });
      stream.on('error', reject);
      stream.resume();
      stream.on('close', () => resolve(got));
    });
    assert.equal(trailers?.['x-checksum'], 'small-sum');
    assert.equal(trailers?.['x-status'], 'done');
  } finally {
    session.close();
  }
});
