/**
 * The lean HTTP/1.1 front against node:http: the same malformed, smuggling-shaped
 * and edge-case requests, each on a fresh connection followed by a pipelined
 * probe, must get the same statuses and the same close behaviour from both
 * (docs/benchmarks.md, "The lean HTTP/1.1 front").
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startGateway, type RunningGateway } from '../support/in-process.js';
import { captureUpstream, type CaptureUpstream } from './raw-http.js';

const PROBE = 'GET /no-such-route HTTP/1.1\r\nHost: probe\r\n\r\n';
/** The probe's answer (NO_ROUTE_BODY): seen means the connection survived the case. */
const PROBE_MARK = 'No route matched';

const long = 'a'.repeat(17 * 1024);
const cases: Record<string, string> = {
  'plain GET': 'GET /r HTTP/1.1\r\nHost: x\r\n\r\n',
  HEAD: 'HEAD /r HTTP/1.1\r\nHost: x\r\n\r\n',
  'POST with a length': 'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello',
  'POST chunked': 'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
  'chunked with a trailer':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n',
  'CL + TE':
    'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'TE + CL':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
  'two different Content-Length':
    'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
  'two equal Content-Length':
    'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello',
  'Content-Length 5, 5': 'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello',
  'Content-Length +5': 'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello',
  'Content-Length -1': 'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
  'Content-Length 0x5': 'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello',
  'Content-Length of 20 digits':
    'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n',
  'TE chunked, identity':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
  'TE identity, chunked':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n',
  'TE xchunked': 'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n',
  'TE CHUNKED': 'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n',
  'two TE headers':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'TE with a space before the colon':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n',
  'chunk size not hex':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n',
  'chunk size overflow':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n',
  'negative chunk size':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n',
  'chunk without CRLF after data':
    'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX0\r\n\r\n',
  'LF-only chunks': 'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n',
  'obs-fold': 'GET /r HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n',
  'header without a colon': 'GET /r HTTP/1.1\r\nHost: x\r\nX-A\r\n\r\n',
  'space before a header colon': 'GET /r HTTP/1.1\r\nHost: x\r\nX-A : 1\r\n\r\n',
  'overlong header (17 KiB)': `GET /r HTTP/1.1\r\nHost: x\r\nX-Long: ${long}\r\n\r\n`,
  'overlong request line': `GET /r?${long} HTTP/1.1\r\nHost: x\r\n\r\n`,
  'bare LF line endings': 'GET /r HTTP/1.1\nHost: x\n\n',
  'bare CR': 'GET /r HTTP/1.1\rHost: x\r\n\r\n',
  'NUL in the path': 'GET /r\0x HTTP/1.1\r\nHost: x\r\n\r\n',
  'space in the path': 'GET /r x HTTP/1.1\r\nHost: x\r\n\r\n',
  'unknown method': 'FOO /r HTTP/1.1\r\nHost: x\r\n\r\n',
  'lowercase method': 'get /r HTTP/1.1\r\nHost: x\r\n\r\n',
  'bare method': 'GET\r\n\r\n',
  'HTTP/9.9': 'GET /r HTTP/9.9\r\nHost: x\r\n\r\n',
  'binary junk': '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n',
  'HTTP/1.1 without Host': 'GET /r HTTP/1.1\r\n\r\n',
  'two Host headers': 'GET /r HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n',
  'HTTP/1.0 without Host': 'GET /r HTTP/1.0\r\n\r\n',
  'HTTP/1.0 keep-alive': 'GET /r HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
  'TE on HTTP/1.0':
    'POST /r HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'Connection: close': 'GET /r HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  'absolute-form target': 'GET http://elsewhere/r HTTP/1.1\r\nHost: x\r\n\r\n',
  'absolute-form with user info': 'GET http://u@elsewhere/r HTTP/1.1\r\nHost: x\r\n\r\n',
  'asterisk target': 'GET * HTTP/1.1\r\nHost: x\r\n\r\n',
  'dot segments': 'GET /a/../r HTTP/1.1\r\nHost: x\r\n\r\n',
  'Expect: 100-continue':
    'POST /r HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi',
  'unknown expectation': 'POST /r HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\nhi',
  'three pipelined requests': 'GET /r HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(3),
  'Upgrade: h2c':
    'GET /r HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n',
  CONNECT: 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
  'body over max_request_body_bytes': `POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n${'b'.repeat(2048)}`,
  'chunked body over max_request_body_bytes': `POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n${'b'.repeat(2048)}\r\n0\r\n\r\n`,
};

interface Outcome {
  statuses: number[];
  /** The server closed the connection before answering the pipelined probe. */
  closed: boolean;
}

/** Sends `input` then the probe on a fresh connection; returns the statuses seen and whether the probe was answered. */
function exchange(port: number, input: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`neither an answer to the probe nor a close within 15 s; got:\n${data}`));
    }, 15_000);
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const statuses = [...data.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      resolve({ statuses, closed });
    };
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      if (data.includes(PROBE_MARK)) done(false);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => done(false === data.includes(PROBE_MARK)));
    socket.write(Buffer.from(input + PROBE, 'latin1'));
  });
}

const gatewayYaml = (port: number) => `
routes:
  - { name: r, match: { path: /r }, policy: proxy }
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
const systemYaml = (front: string) =>
  `listener: { bind: 127.0.0.1, port: 0, max_request_body_bytes: 1024, http1_server: ${front} }\n` +
  'timeouts: { shutdown_timeout_seconds: 2, connection_seconds: 30 }\n';

let upstream: CaptureUpstream;
let lean: RunningGateway;
let node: RunningGateway;

before(async () => {
  upstream = await captureUpstream();
  lean = await startGateway(gatewayYaml(upstream.port), { systemYaml: systemYaml('lean') });
  node = await startGateway(gatewayYaml(upstream.port), { systemYaml: systemYaml('node') });
});

after(async () => {
  await Promise.all([lean.stop(), node.stop()]);
  upstream.close();
});

for (const [name, input] of Object.entries(cases)) {
  test(`lean front: "${name}" gets the same statuses and close behaviour as node:http`, async () => {
    const [fromLean, fromNode] = await Promise.all([exchange(lean.port, input), exchange(node.port, input)]);
    assert.deepEqual(fromLean, fromNode);
  });
}

test('lean front: the smuggling shapes are refused with 400 and a close (not just equal to node:http)', async () => {
  for (const name of [
    'CL + TE',
    'two different Content-Length',
    'chunk size not hex',
    'obs-fold',
    'TE xchunked',
  ]) {
    assert.deepEqual(await exchange(lean.port, cases[name]!), { statuses: [400], closed: true }, name);
  }
  const before = upstream.seen.length;
  await exchange(lean.port, cases['CL + TE']!);
  assert.equal(upstream.seen.length, before, 'nothing of a refused request reaches the upstream');
});

test('lean front: a pipelined body and request reach the upstream in order, re-framed with content-length', async () => {
  upstream.seen.length = 0;
  const outcome = await exchange(lean.port, cases['POST chunked']! + cases['plain GET']!);
  assert.deepEqual(outcome, { statuses: [200, 200, 404], closed: false });
  assert.deepEqual(
    upstream.seen.map((s) => [s.method, s.body, s.headers['content-length'], s.headers['transfer-encoding']]),
    [
      ['POST', 'hello', '5', undefined],
      ['GET', '', undefined, undefined],
    ],
  );
});
