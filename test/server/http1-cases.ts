/**
 * Raw HTTP/1.1 inputs for the front differential (http1-differential.test.ts),
 * in the families of the security review's differential
 * (../shared/reports/security-review.md, "How the differential was run").
 * Each case is the exact bytes written on a fresh connection; most are
 * followed by a pipelined `GET /SMUGGLED` (with `Connection: close`, so a
 * server that reads it as a request answers and closes at once).
 */

export interface RawCase {
  name: string;
  family: string;
  /** latin1 bytes */
  input: string;
}

export const SMUGGLED = 'GET /SMUGGLED HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

const cases: RawCase[] = [];
const add = (family: string, name: string, input: string, probe = true) =>
  cases.push({ family, name: `${family}: ${name}`, input: probe ? input + SMUGGLED : input });

const post = (fields: string, body: string, target = '/d') =>
  `POST ${target} HTTP/1.1\r\nHost: x\r\n${fields}\r\n${body}`;
const CHUNKED_BODY = '5\r\nhello\r\n0\r\n\r\n';

// --- 30 Transfer-Encoding values -------------------------------------------------
for (const te of [
  'chunked',
  'Chunked',
  'CHUNKED',
  ' chunked',
  'chunked ',
  '\tchunked',
  'chunked\t',
  'gzip, chunked',
  'identity, chunked',
  'x, chunked',
  ', chunked',
  ',chunked',
  'chunked, chunked',
  'chunked,',
  'chunked, identity',
  'chunked, gzip',
  'gzip',
  'identity',
  'deflate',
  'xchunked',
  'chunkedx',
  'chunk',
  '"chunked"',
  'chunked;q=1',
  'chunked ,',
  'chunked\x00',
  'chu nked',
  'chunked\x0b',
  '',
  'gzip,chunked',
]) {
  add('TE value', JSON.stringify(te), post(`Transfer-Encoding: ${te}\r\n`, CHUNKED_BODY));
}

// --- 9 TE field names, each with a Content-Length -------------------------------------
for (const name of [
  'Transfer-Encoding',
  'transfer-encoding',
  'TRANSFER-ENCODING',
  'Transfer-Encoding ',
  'Transfer_Encoding',
  'X-Transfer-Encoding',
  ' Transfer-Encoding',
  'Transfer-Encoding\t',
  'Transfer-\x00Encoding',
]) {
  add(
    'TE name with CL',
    JSON.stringify(name),
    post(`Content-Length: 20\r\n${name}: chunked\r\n`, '5\r\nhello\r\n0\r\n\r\nXXXXX'),
  );
}

// --- 4 duplicate TE -----------------------------------------------------------------
add(
  'duplicate TE',
  'chunked twice',
  post('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', CHUNKED_BODY),
);
add(
  'duplicate TE',
  'identity then chunked',
  post('Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n', CHUNKED_BODY),
);
add(
  'duplicate TE',
  'chunked then identity',
  post('Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n', CHUNKED_BODY),
);
add(
  'duplicate TE',
  'chunked then empty',
  post('Transfer-Encoding: chunked\r\nTransfer-Encoding:\r\n', CHUNKED_BODY),
);

// --- 4 CL + TE orders ----------------------------------------------------------------
add('CL+TE', 'CL then TE', post('Content-Length: 4\r\nTransfer-Encoding: chunked\r\n', CHUNKED_BODY));
add('CL+TE', 'TE then CL', post('Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', CHUNKED_BODY));
add('CL+TE', 'CL 0 then TE', post('Content-Length: 0\r\nTransfer-Encoding: chunked\r\n', CHUNKED_BODY));
add(
  'CL+TE',
  'TE, CL, TE',
  post('Transfer-Encoding: chunked\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n', CHUNKED_BODY),
);

// --- 23 Content-Length values --------------------------------------------------------
for (const cl of [
  '5',
  '05',
  '+5',
  '-5',
  ' 5',
  '5 ',
  '\t5',
  '5,5',
  '5, 5',
  '5, 6',
  '0x5',
  '5.0',
  '5e0',
  '',
  'abc',
  '99999999999999999999',
  '18446744073709551621',
  '4294967301',
  '1_0',
  '5\x00',
  '0',
  '3',
  '10',
]) {
  add('CL value', JSON.stringify(cl), post(`Content-Length: ${cl}\r\n`, 'hello'));
}

// --- 8 Content-Length variants -----------------------------------------------------------
add('CL variant', 'duplicate, same', post('Content-Length: 5\r\nContent-Length: 5\r\n', 'hello'));
add('CL variant', 'duplicate, different', post('Content-Length: 5\r\nContent-Length: 3\r\n', 'hello'));
add('CL variant', 'space before colon', post('Content-Length : 5\r\n', 'hello'));
add('CL variant', 'underscore name', post('Content_Length: 5\r\n', 'hello'));
add('CL variant', 'obs-fold value', post('Content-Length:\r\n 5\r\n', 'hello'));
for (const method of ['GET', 'HEAD', 'OPTIONS', 'DELETE'])
  add('CL variant', `on ${method}`, `${method} /d HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello`);

// --- 39 chunked bodies ---------------------------------------------------------------------
const chunkedBodies: [string, string][] = [
  ['one chunk', '5\r\nhello\r\n0\r\n\r\n'],
  ['two chunks', '2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n'],
  ['upper-case hex', 'A\r\n0123456789\r\n0\r\n\r\n'],
  ['lower-case hex', 'a\r\n0123456789\r\n0\r\n\r\n'],
  ['leading zeros', '0005\r\nhello\r\n0\r\n\r\n'],
  ['size 0x prefix', '0x5\r\nhello\r\n0\r\n\r\n'],
  ['negative size', '-5\r\nhello\r\n0\r\n\r\n'],
  ['size with +', '+5\r\nhello\r\n0\r\n\r\n'],
  ['size not hex', 'zz\r\nhello\r\n0\r\n\r\n'],
  ['size overflow 64-bit', 'fffffffffffffffff\r\nhello\r\n0\r\n\r\n'],
  ['size overflow 20 digits', '10000000000000000000\r\nhello\r\n0\r\n\r\n'],
  ['size too small', '3\r\nhello\r\n0\r\n\r\n'],
  ['size too large', '8\r\nhello\r\n0\r\n\r\n'],
  ['empty size line', '\r\nhello\r\n0\r\n\r\n'],
  ['space after size', '5 \r\nhello\r\n0\r\n\r\n'],
  ['tab after size', '5\t\r\nhello\r\n0\r\n\r\n'],
  ['space before size', ' 5\r\nhello\r\n0\r\n\r\n'],
  ['extension', '5;ext=1\r\nhello\r\n0\r\n\r\n'],
  ['extension quoted', '5;ext="a b"\r\nhello\r\n0\r\n\r\n'],
  ['extension without value', '5;ext\r\nhello\r\n0\r\n\r\n'],
  ['extension with space', '5 ; ext=1\r\nhello\r\n0\r\n\r\n'],
  ['extension 20 KB', `5;${'e'.repeat(20 * 1024)}\r\nhello\r\n0\r\n\r\n`],
  ['extension with LF', '5;a\nb\r\nhello\r\n0\r\n\r\n'],
  ['extension on last chunk', '5\r\nhello\r\n0;x=y\r\n\r\n'],
  ['bare LF after size', '5\nhello\r\n0\r\n\r\n'],
  ['bare LF after data', '5\r\nhello\n0\r\n\r\n'],
  ['bare LF at the end', '5\r\nhello\r\n0\n\n'],
  ['bare CR after size', '5\rhello\r\n0\r\n\r\n'],
  ['bare CR after data', '5\r\nhello\r0\r\n\r\n'],
  ['no CRLF after data', '5\r\nhelloXX0\r\n\r\n'],
  ['missing last chunk', '5\r\nhello\r\n'],
  ['last chunk without final CRLF', '5\r\nhello\r\n0\r\n'],
  ['trailer', '5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n'],
  ['trailer Authorization', '5\r\nhello\r\n0\r\nAuthorization: Bearer T\r\n\r\n'],
  ['trailer Content-Length', '5\r\nhello\r\n0\r\nContent-Length: 100\r\n\r\n'],
  ['trailer without colon', '5\r\nhello\r\n0\r\nbad trailer\r\n\r\n'],
  ['trailer obs-fold', '5\r\nhello\r\n0\r\nX-T: 1\r\n 2\r\n\r\n'],
  ['trailer with NUL', '5\r\nhello\r\n0\r\nX-T: a\x00b\r\n\r\n'],
  ['request smuggled in a trailer', '5\r\nhello\r\n0\r\nGET /SMUGGLED HTTP/1.1\r\n\r\n'],
];
for (const [name, body] of chunkedBodies)
  add('chunked body', name, post('Transfer-Encoding: chunked\r\n', body));

// --- 11 line endings ------------------------------------------------------------------------
add('line ending', 'bare LF everywhere', 'GET /d HTTP/1.1\nHost: x\n\n');
add('line ending', 'bare LF after the request line', 'GET /d HTTP/1.1\nHost: x\r\n\r\n');
add('line ending', 'bare LF after a field', 'GET /d HTTP/1.1\r\nHost: x\n\r\n');
add('line ending', 'bare LF ending the head', 'GET /d HTTP/1.1\r\nHost: x\r\n\n');
add('line ending', 'bare CR after the request line', 'GET /d HTTP/1.1\rHost: x\r\n\r\n');
add('line ending', 'bare CR in a field', 'GET /d HTTP/1.1\r\nHost: x\r\nX-A: 1\rX-B: 2\r\n\r\n');
add('line ending', 'CR CR LF', 'GET /d HTTP/1.1\r\r\nHost: x\r\n\r\n');
add('line ending', 'leading CRLF before the request', '\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n');
add('line ending', 'two leading CRLF', '\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n');
add('line ending', 'LF CR', 'GET /d HTTP/1.1\n\rHost: x\r\n\r\n');
add('line ending', 'bare LF with a CL body', 'POST /d HTTP/1.1\nHost: x\nContent-Length: 5\n\nhello');

// --- 26 header name / value bytes, Connection-listed fields ---------------------------------
const get = (fields: string) => `GET /d HTTP/1.1\r\nHost: x\r\n${fields}\r\n`;
for (const [name, field] of [
  ['space in a name', 'X A: 1\r\n'],
  ['tab in a name', 'X\tA: 1\r\n'],
  ['NUL in a name', 'X\x00A: 1\r\n'],
  ['DEL in a name', 'X\x7fA: 1\r\n'],
  ['high byte in a name', 'X\xe9A: 1\r\n'],
  ['colon only', ': 1\r\n'],
  ['no colon', 'X-A\r\n'],
  ['space before the colon', 'X-A : 1\r\n'],
  ['empty value', 'X-A:\r\n'],
  ['NUL in a value', 'X-A: a\x00b\r\n'],
  ['CR in a value', 'X-A: a\rb\r\n'],
  ['DEL in a value', 'X-A: a\x7fb\r\n'],
  ['vertical tab in a value', 'X-A: a\x0bb\r\n'],
  ['form feed in a value', 'X-A: a\x0cb\r\n'],
  ['high bytes in a value', 'X-A: caf\xe9\xff\r\n'],
  ['tab in a value', 'X-A: a\tb\r\n'],
  ['obs-fold', 'X-A: a\r\n b\r\n'],
  ['obs-fold with tab', 'X-A: a\r\n\tb\r\n'],
  ['first field folded', ' X-A: 1\r\n'],
  ['underscore name', 'X_Forwarded_For: 7.7.7.7\r\n'],
  ['Connection lists a field', 'Connection: x-secret\r\nX-Secret: 1\r\n'],
  ['Connection lists Authorization', 'Connection: authorization\r\nAuthorization: Bearer A\r\n'],
  ['Connection lists Host', 'Connection: host\r\n'],
  ['Connection close, keep-alive', 'Connection: close, keep-alive\r\n'],
  ['Proxy-Connection', 'Proxy-Connection: keep-alive\r\n'],
  ['Keep-Alive and TE fields', 'Keep-Alive: timeout=5\r\nTE: trailers\r\n'],
] as const) {
  add('header bytes', name, get(field));
}

// --- 45 request lines and targets ------------------------------------------------------------
for (const [name, line] of [
  ['HTTP/1.0', 'GET /d HTTP/1.0'],
  ['HTTP/1.2', 'GET /d HTTP/1.2'],
  ['HTTP/2.0', 'GET /d HTTP/2.0'],
  ['HTTP/3.0', 'GET /d HTTP/3.0'],
  ['HTTP/0.9', 'GET /d HTTP/0.9'],
  ['HTTP/9.9', 'GET /d HTTP/9.9'],
  ['HTTP/1.10', 'GET /d HTTP/1.10'],
  ['lower-case http', 'GET /d http/1.1'],
  ['no version', 'GET /d'],
  ['two spaces', 'GET  /d HTTP/1.1'],
  ['tab separator', 'GET\t/d HTTP/1.1'],
  ['trailing space', 'GET /d HTTP/1.1 '],
  ['space in the target', 'GET /d x HTTP/1.1'],
  ['absolute form', 'GET http://x/d HTTP/1.1'],
  ['absolute form https', 'GET https://x/d HTTP/1.1'],
  ['absolute form other host', 'GET http://other.example/d HTTP/1.1'],
  ['absolute form with user info', 'GET http://u:p@x/d HTTP/1.1'],
  ['absolute form ftp', 'GET ftp://x/d HTTP/1.1'],
  ['authority form on GET', 'GET x:80 HTTP/1.1'],
  ['asterisk on OPTIONS', 'OPTIONS * HTTP/1.1'],
  ['asterisk on GET', 'GET * HTTP/1.1'],
  ['CONNECT', 'CONNECT x:443 HTTP/1.1'],
  ['dot segments', 'GET /a/../d HTTP/1.1'],
  ['encoded dot segments', 'GET /a/%2e%2e/d HTTP/1.1'],
  ['climbs above the root', 'GET /../d HTTP/1.1'],
  ['double slash', 'GET //d HTTP/1.1'],
  ['backslash', 'GET /a\\..\\d HTTP/1.1'],
  ['encoded slash', 'GET /a%2fd HTTP/1.1'],
  ['%00 in the path', 'GET /d%00x HTTP/1.1'],
  ['%00 in the query', 'GET /d?x=%00 HTTP/1.1'],
  ['bad escape', 'GET /d%zz HTTP/1.1'],
  ['fragment', 'GET /d#frag HTTP/1.1'],
  ['query only', 'GET ?x=1 HTTP/1.1'],
  ['empty target', 'GET  HTTP/1.1'],
  ['high bytes in the target', 'GET /caf\xe9 HTTP/1.1'],
  ['NUL in the target', 'GET /d\x00x HTTP/1.1'],
  ['DEL in the target', 'GET /d\x7fx HTTP/1.1'],
  ['lower-case method', 'get /d HTTP/1.1'],
  ['unknown method', 'FOO /d HTTP/1.1'],
  ['QUERY', 'QUERY /d HTTP/1.1'],
  ['TRACE', 'TRACE /d HTTP/1.1'],
  ['PURGE', 'PURGE /d HTTP/1.1'],
  ['M-SEARCH', 'M-SEARCH /d HTTP/1.1'],
  ['PRI', 'PRI * HTTP/2.0'],
  ['method only', 'GET'],
] as const) {
  add('request line', name, `${line}\r\nHost: x\r\n\r\n`);
}

// --- 10 Host variants -------------------------------------------------------------------------
for (const [name, fields] of [
  ['none on HTTP/1.1', ''],
  ['empty', 'Host:\r\n'],
  ['space inside', 'Host: a b\r\n'],
  ['slash', 'Host: x/y\r\n'],
  ['two Host fields', 'Host: x\r\nHost: y\r\n'],
  ['with a port', 'Host: x:8080\r\n'],
  ['IPv6 literal', 'Host: [::1]:8080\r\n'],
  ['user info', 'Host: u@x\r\n'],
  ['bad port', 'Host: x:abc\r\n'],
  ['comma list', 'Host: x, y\r\n'],
] as const) {
  add('Host', name, `GET /d HTTP/1.1\r\n${fields}\r\n`);
}

// --- 14 Expect, HTTP/1.0, keep-alive, pipelining ----------------------------------------------------
add('flow', 'Expect: 100-continue', post('Expect: 100-continue\r\nContent-Length: 5\r\n', 'hello'));
add('flow', 'Expect: 100-Continue', post('Expect: 100-Continue\r\nContent-Length: 5\r\n', 'hello'));
add('flow', 'unknown expectation', post('Expect: teapot\r\nContent-Length: 5\r\n', 'hello'));
add(
  'flow',
  'Expect twice',
  post('Expect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 5\r\n', 'hello'),
);
add(
  'flow',
  'Expect on HTTP/1.0',
  'POST /d HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello',
);
add('flow', 'HTTP/1.0 without Host', 'GET /d HTTP/1.0\r\n\r\n');
add('flow', 'HTTP/1.0 keep-alive', 'GET /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n');
add(
  'flow',
  'HTTP/1.0 chunked',
  'POST /d HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' + CHUNKED_BODY,
);
add('flow', 'Connection: close then more', 'GET /d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
add(
  'flow',
  'three pipelined GETs',
  'GET /d1 HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(1) +
    'GET /d2 HTTP/1.1\r\nHost: x\r\n\r\nGET /d3 HTTP/1.1\r\nHost: x\r\n\r\n',
);
add(
  'flow',
  'pipelined POST bodies',
  post('Content-Length: 5\r\n', 'hello') + post('Transfer-Encoding: chunked\r\n', CHUNKED_BODY, '/d2'),
);
add(
  'flow',
  'GET then a bad request',
  'GET /d HTTP/1.1\r\nHost: x\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\nX A: 1\r\n\r\n',
);
add('flow', 'body shorter than CL', post('Content-Length: 10\r\n', 'hello'), false);
add('flow', 'chunked body cut short', post('Transfer-Encoding: chunked\r\n', '5\r\nhel'), false);

// --- 23 Upgrade variants -----------------------------------------------------------------------------
const ws =
  'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
const h2c =
  'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n';
for (const [name, fields, body] of [
  ['h2c', h2c, ''],
  ['h2c with a CL body', `${h2c}Content-Length: 5\r\n`, 'hello'],
  ['h2c with a chunked body', `${h2c}Transfer-Encoding: chunked\r\n`, CHUNKED_BODY],
  ['h2c without HTTP2-Settings', 'Connection: Upgrade\r\nUpgrade: h2c\r\n', ''],
  ['h2c not in Connection', 'Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n', ''],
  ['h2 over cleartext', 'Connection: Upgrade\r\nUpgrade: h2\r\n', ''],
  ['TLS/1.0', 'Connection: Upgrade\r\nUpgrade: TLS/1.0\r\n', ''],
  ['unknown protocol', 'Connection: Upgrade\r\nUpgrade: foo\r\n', ''],
  ['unknown protocol with a body', 'Connection: Upgrade\r\nUpgrade: foo\r\nContent-Length: 5\r\n', 'hello'],
  ['Upgrade without Connection', 'Upgrade: foo\r\n', ''],
  ['Connection upgrade without Upgrade', 'Connection: Upgrade\r\n', ''],
  ['two protocols', 'Connection: Upgrade\r\nUpgrade: foo, h2c\r\n', ''],
  ['empty Upgrade', 'Connection: Upgrade\r\nUpgrade:\r\n', ''],
  ['websocket', ws, ''],
  ['websocket with a CL body', `${ws}Content-Length: 5\r\n`, 'hello'],
  ['websocket with a chunked body', `${ws}Transfer-Encoding: chunked\r\n`, CHUNKED_BODY],
  ['websocket version 8', ws.replace('13', '8'), ''],
  ['websocket without key', 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n', ''],
  ['WebSocket upper case', ws.replace('websocket', 'WebSocket'), ''],
  ['websocket on POST', ws, ''],
  ['websocket on HTTP/1.0', ws, ''],
  ['Connection keep-alive, Upgrade', 'Connection: keep-alive, Upgrade\r\nUpgrade: foo\r\n', ''],
  ['Upgrade twice', 'Connection: Upgrade\r\nUpgrade: foo\r\nUpgrade: bar\r\n', ''],
] as const) {
  const method = name === 'websocket on POST' || body !== '' ? 'POST' : 'GET';
  const version = name === 'websocket on HTTP/1.0' ? '1.0' : '1.1';
  add('Upgrade', name, `${method} /d HTTP/${version}\r\nHost: x\r\n${fields}\r\n${body}`);
}

// --- 4 sizes --------------------------------------------------------------------------------------------
add('size', '10 KB path', `GET /d?${'p'.repeat(10 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`);
add('size', '15 KB header', get(`X-Big: ${'h'.repeat(15 * 1024)}\r\n`));
add('size', '70 KB header', get(`X-Big: ${'h'.repeat(70 * 1024)}\r\n`));
add('size', '200 fields', get(Array.from({ length: 200 }, (_, i) => `X-F${i}: ${i}\r\n`).join('')));

export const CASES: readonly RawCase[] = cases;
