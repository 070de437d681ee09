import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as tlsConnect, TLSSocket } from 'node:tls';
import { readServerName, type SniResult } from '../../src/stream/sni.js';

const SERVERNAME = 'API.Example.com';
const FOUND: SniResult = { kind: 'found', name: 'api.example.com' };
const ABSENT: SniResult = { kind: 'absent' };
const INCOMPLETE: SniResult = { kind: 'incomplete' };
// A client that stops sending before a whole record has arrived is waiting for the server.
const CLIENT_PAUSE_MS = 500;

let withSni: Buffer;
let withoutSni: Buffer;

/** The first bytes node:tls sends as a client: its first whole TLS record, or what arrived before it paused. */
async function captureClientHello(servername: string): Promise<Buffer> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const captured = new Promise<Buffer>((resolve) => {
    server.once('connection', (socket) => {
      const chunks: Buffer[] = [];
      let pause: NodeJS.Timeout | undefined;
      const finish = () => {
        clearTimeout(pause);
        socket.destroy();
        resolve(Buffer.concat(chunks));
      };
      socket.on('error', finish);
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        const bytes = Buffer.concat(chunks);
        clearTimeout(pause);
        if (bytes.length >= 5 && bytes.length >= 5 + bytes.readUInt16BE(3)) finish();
        else pause = setTimeout(finish, CLIENT_PAUSE_MS);
      });
    });
  });
  const { port } = server.address() as AddressInfo;
  const client = tlsConnect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false });
  client.on('error', () => {}); // the capturing server hangs up mid-handshake
  try {
    return await captured;
  } finally {
    client.destroy();
    server.close();
  }
}

/** The server name OpenSSL's own server side reads from `hello`, or undefined when it sees none. */
function opensslServerName(hello: Buffer): Promise<string | undefined> {
  return new Promise((resolve) => {
    const wire = new Duplex({
      read() {},
      write(_chunk, _encoding, done) {
        done();
      },
    });
    const socket = new TLSSocket(wire, {
      isServer: true,
      // Called only for a hello carrying server_name; failing it ends the handshake, so no certificate is needed.
      SNICallback(name, done) {
        resolve(name);
        done(new Error('server name captured'));
      },
    });
    socket.on('error', () => {
      resolve(undefined);
      socket.destroy();
    });
    socket.on('close', () => resolve(undefined));
    wire.push(hello);
  });
}

/** The handshake bytes of a single-record hello, re-framed into records of the given payload sizes (the last takes the rest). */
function reframe(hello: Buffer, ...sizes: number[]): Buffer {
  const payload = hello.subarray(5, 5 + hello.readUInt16BE(3));
  const records: Buffer[] = [];
  let pos = 0;
  for (const size of [...sizes, payload.length]) {
    const fragment = payload.subarray(pos, Math.min(pos + size, payload.length));
    if (fragment.length === 0) break;
    const header = Buffer.from([22, hello[1]!, hello[2]!, 0, 0]);
    header.writeUInt16BE(fragment.length, 3);
    records.push(header, fragment);
    pos += fragment.length;
  }
  return Buffer.concat(records);
}

/** Where the extensions length of a single-record hello sits, found by walking the fixed ClientHello fields. */
function extensionsLengthOffset(hello: Buffer): number {
  let pos = 5 + 4 + 2 + 32;
  pos += 1 + hello[pos]!; // session id
  pos += 2 + hello.readUInt16BE(pos); // cipher suites
  pos += 1 + hello[pos]!; // compression methods
  return pos;
}

/** `hello` with [from, to) inside its extensions replaced by `insert`; record, handshake and extensions lengths follow. */
function spliceExtensions(hello: Buffer, from: number, to: number, insert: Buffer): Buffer {
  const out = Buffer.concat([hello.subarray(0, from), insert, hello.subarray(to)]);
  const delta = insert.length - (to - from);
  const extensions = extensionsLengthOffset(hello);
  out.writeUInt16BE(hello.readUInt16BE(3) + delta, 3);
  out.writeUIntBE(hello.readUIntBE(6, 3) + delta, 6, 3);
  out.writeUInt16BE(hello.readUInt16BE(extensions) + delta, extensions);
  return out;
}

/** A server_name extension listing `entries` as [name type, name bytes]. */
function serverNameExtension(...entries: [number, Buffer][]): Buffer {
  const list = Buffer.concat(
    entries.map(([type, name]) =>
      Buffer.concat([Buffer.from([type, name.length >> 8, name.length & 0xff]), name]),
    ),
  );
  const header = Buffer.alloc(6);
  header.writeUInt16BE(0, 0);
  header.writeUInt16BE(list.length + 2, 2);
  header.writeUInt16BE(list.length, 4);
  return Buffer.concat([header, list]);
}

/** Where the captured hello's server_name extension starts and ends. */
function serverNameSpan(hello: Buffer): [number, number] {
  const name = hello.indexOf(SERVERNAME);
  const start = name - 9;
  assert.equal(hello.readUInt16BE(start), 0, 'server_name extension type');
  return [start, start + 4 + hello.readUInt16BE(start + 2)];
}

/** The captured hello with its server_name extension replaced by `extension` (or several). */
function withServerNameExtension(...extensions: Buffer[]): Buffer {
  const [start, end] = serverNameSpan(withSni);
  return spliceExtensions(withSni, start, end, Buffer.concat(extensions));
}

function withHostName(name: string | Buffer): Buffer {
  return withServerNameExtension(serverNameExtension([0, Buffer.from(name)]));
}

/** A copy of `hello` with `bytes` written at `offset`. */
function patched(hello: Buffer, offset: number, ...bytes: number[]): Buffer {
  const out = Buffer.from(hello);
  out.set(bytes, offset);
  return out;
}

/** `value` as `width` big-endian bytes. */
function toBytes(value: number, width: number): number[] {
  return Array.from({ length: width }, (_, i) => (value >> (8 * (width - 1 - i))) & 0xff);
}

/** Deterministic PRNG (mulberry32) so a fuzz failure reproduces. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

before(async () => {
  withSni = await captureClientHello(SERVERNAME);
  withoutSni = await captureClientHello('');
});

test('sni: the captured bytes are one whole TLS handshake record holding a ClientHello', () => {
  for (const hello of [withSni, withoutSni]) {
    assert.equal(hello[0], 22, 'handshake record');
    assert.equal(hello[5], 1, 'ClientHello');
    assert.equal(hello.length, 5 + hello.readUInt16BE(3), 'exactly one record');
    assert.ok(hello.length > 200, `a real hello, not a stub (${hello.length} bytes)`);
  }
});

test('sni: a real node:tls ClientHello yields its server name, lowercased, as OpenSSL reads it', async () => {
  assert.deepEqual(readServerName(withSni), FOUND);
  assert.equal(await opensslServerName(withSni), SERVERNAME);
});

test('sni: fed one byte at a time, every strict prefix is incomplete and the whole hello is found', () => {
  for (let length = 0; length < withSni.length; length++) {
    assert.deepEqual(readServerName(withSni.subarray(0, length)), INCOMPLETE, `prefix of ${length} bytes`);
  }
  assert.deepEqual(readServerName(withSni), FOUND);
});

test('sni: a ClientHello split across two TLS records is reassembled', async () => {
  const payloadLength = withSni.readUInt16BE(3);
  // 1..3 split the handshake header itself; the others split the body.
  for (const first of [1, 2, 3, 4, 40, Math.floor(payloadLength / 2), payloadLength - 1]) {
    const framed = reframe(withSni, first);
    assert.equal(framed.length, withSni.length + 5, 'two records');
    assert.deepEqual(readServerName(framed), FOUND, `first record of ${first} bytes`);
  }
  const framed = reframe(withSni, Math.floor(payloadLength / 2));
  assert.equal(await opensslServerName(framed), SERVERNAME, 'OpenSSL accepts the re-framed hello too');
  for (let length = 0; length < framed.length; length++) {
    assert.deepEqual(readServerName(framed.subarray(0, length)), INCOMPLETE, `prefix of ${length} bytes`);
  }
});

test('sni: a ClientHello sent one handshake byte per record is reassembled', () => {
  const framed = reframe(withSni, ...Array<number>(withSni.length).fill(1));
  assert.equal(framed.length, withSni.readUInt16BE(3) * 6);
  assert.deepEqual(readServerName(framed), FOUND);
});

test('sni: records after a complete ClientHello do not matter', () => {
  const changeCipherSpec = Buffer.from([20, 3, 3, 0, 1, 1]);
  assert.deepEqual(readServerName(Buffer.concat([withSni, changeCipherSpec])), FOUND);
  assert.deepEqual(readServerName(Buffer.concat([withSni, Buffer.from('garbage')])), FOUND);
});

test('sni: a ClientHello without server_name is absent, and incomplete until it is whole', async () => {
  assert.equal(await opensslServerName(withoutSni), undefined, "node:tls sent no SNI for servername ''");
  assert.equal(withoutSni.indexOf(SERVERNAME), -1);
  assert.deepEqual(readServerName(withoutSni), ABSENT);
  for (let length = 0; length < withoutSni.length; length++) {
    assert.deepEqual(readServerName(withoutSni.subarray(0, length)), INCOMPLETE, `prefix of ${length} bytes`);
  }
});

test('sni: plain HTTP is absent from its first byte', () => {
  const http = Buffer.from('GET / HTTP/1.1\r\n');
  assert.deepEqual(readServerName(http), ABSENT);
  assert.deepEqual(readServerName(http.subarray(0, 1)), ABSENT);
});

test('sni: an empty buffer is incomplete', () => {
  assert.deepEqual(readServerName(Buffer.alloc(0)), INCOMPLETE);
});

test('sni: a host name loses one trailing dot and is lowercased', () => {
  assert.deepEqual(readServerName(withHostName('Foo.EXAMPLE.org.')), {
    kind: 'found',
    name: 'foo.example.org',
  });
  assert.deepEqual(readServerName(withHostName('*.a_b-c.example')), {
    kind: 'found',
    name: '*.a_b-c.example',
  });
  assert.deepEqual(readServerName(withHostName('a'.repeat(255))), { kind: 'found', name: 'a'.repeat(255) });
  assert.deepEqual(readServerName(withHostName(`${'a'.repeat(255)}.`)), {
    kind: 'found',
    name: 'a'.repeat(255),
  });
});

test('sni: empty, over-long or non-DNS host names are absent', () => {
  for (const name of [
    '',
    '.',
    'a'.repeat(256),
    'api example.com',
    'api.example.com\0',
    'ex\u00e4mple.com',
    'a/b',
    'a:443',
  ]) {
    assert.deepEqual(readServerName(withHostName(name)), ABSENT, JSON.stringify(name));
  }
  assert.deepEqual(readServerName(withHostName(Buffer.from([0x61, 0xff, 0x62]))), ABSENT, 'non-ASCII byte');
});

test('sni: a server_name extension without a well-formed single host_name is absent', () => {
  const host = Buffer.from('api.example.com');
  // Only name type 0 is a host name; other types are skipped.
  assert.deepEqual(readServerName(withServerNameExtension(serverNameExtension([1, host]))), ABSENT);
  assert.deepEqual(readServerName(withServerNameExtension(serverNameExtension([1, host], [0, host]))), FOUND);
  assert.deepEqual(
    readServerName(withServerNameExtension(serverNameExtension([0, host], [0, host]))),
    ABSENT,
  );
  // Two server_name extensions, and an empty ServerNameList.
  const one = serverNameExtension([0, host]);
  assert.deepEqual(readServerName(withServerNameExtension(one, one)), ABSENT);
  assert.deepEqual(readServerName(withServerNameExtension(Buffer.from([0, 0, 0, 2, 0, 0]))), ABSENT);
  assert.deepEqual(readServerName(withServerNameExtension(Buffer.from([0, 0, 0, 0]))), ABSENT);
  // Without the extension at all.
  assert.deepEqual(readServerName(withServerNameExtension()), ABSENT);
});

test('sni: garbage and inconsistent length fields are absent', () => {
  const hello = withSni;
  const recordLength = hello.readUInt16BE(3);
  const messageLength = hello.readUIntBE(6, 3);
  const extensions = extensionsLengthOffset(hello);
  const [nameExtension] = serverNameSpan(hello);
  const cases: [string, Buffer][] = [
    ['application data record', patched(hello, 0, 23)],
    ['record version 3.5', patched(hello, 2, 5)],
    ['record version 2.0', patched(hello, 1, 2, 0)],
    ['empty record', patched(hello, 3, 0, 0)],
    ['record longer than 2^14 + 2048', patched(hello, 3, 0x48, 0x01)],
    [
      'record shorter than the hello',
      Buffer.concat([patched(hello, 3, 0, 40).subarray(0, 45), Buffer.from('GET /')]),
    ],
    ['ServerHello', patched(hello, 5, 2)],
    ['message shorter than its fields', patched(hello, 6, 0, 0, 40)],
    ['message one byte short', patched(hello, 6, ...toBytes(messageLength - 1, 3))],
    ['message one byte long', patched(hello, 6, ...toBytes(messageLength + 1, 3))],
    ['client version 2.0', patched(hello, 9, 2, 0)],
    ['session id longer than 32', patched(hello, 43, 33)],
    ['odd cipher suites length', patched(hello, 44 + hello[43]!, 0, 3)],
    [
      'extensions length one short',
      patched(hello, extensions, ...toBytes(hello.readUInt16BE(extensions) - 1, 2)),
    ],
    [
      'extensions length one long',
      patched(hello, extensions, ...toBytes(hello.readUInt16BE(extensions) + 1, 2)),
    ],
    ['server_name data overruns the extensions', patched(hello, nameExtension + 2, 0xff, 0xff)],
    ['host name overruns its list', patched(hello, nameExtension + 7, 0, 0xff)],
    ['host name list longer than its extension', patched(hello, nameExtension + 4, 0, 0xff)],
    [
      'handshake record then application data',
      Buffer.concat([reframe(hello, 100).subarray(0, 105), patched(hello, 0, 23)]),
    ],
    ['random bytes', Buffer.from('16fe00ffff0102030405060708090a', 'hex')],
    [
      'TLS-looking header over text',
      Buffer.from('\x16\x03\x01\x00\x20hello, this is not a ClientHello!', 'latin1'),
    ],
  ];
  assert.equal(recordLength, messageLength + 4);
  for (const [what, bytes] of cases) assert.deepEqual(readServerName(bytes), ABSENT, what);
});

test('sni: a malformed prefix is absent before the rest arrives', () => {
  // A session id length over 32 is wrong whatever follows.
  assert.deepEqual(readServerName(patched(withSni, 43, 33).subarray(0, 60)), ABSENT);
  assert.deepEqual(readServerName(withSni.subarray(0, 60)), INCOMPLETE);
  // So is a record header for another content type in the middle of a split hello.
  const framed = reframe(withSni, 100);
  assert.deepEqual(readServerName(patched(framed, 105, 23).subarray(0, 106)), ABSENT);
});

test('sni: thousands of random mutations of a real hello never throw', () => {
  const next = random(0x5eed);
  const pick = (n: number) => Math.floor(next() * n);
  const noise = (length: number) => Buffer.from(Array.from({ length }, () => pick(256)));
  const seeds = [withSni, withoutSni, reframe(withSni, 3, 50, 100)];
  const kinds = { found: 0, absent: 0, incomplete: 0 };
  for (let round = 0; round < 8000; round++) {
    // Every fourth round: random bytes behind a plausible record header, to exercise the length checks.
    const seed =
      seeds[round % 4] ??
      Buffer.concat([Buffer.from([22, 3, pick(5), pick(3), pick(256), 1]), noise(pick(600))]);
    let bytes = Buffer.from(seed);
    for (let edits = 1 + pick(4); edits > 0; edits--) {
      const at = pick(bytes.length);
      const edit = pick(3);
      if (edit === 0) bytes[at] = pick(256);
      else if (edit === 1) bytes[at] = (bytes[at]! + (next() < 0.5 ? 1 : 255)) & 0xff;
      else bytes = bytes.subarray(0, at);
    }
    const result = readServerName(bytes);
    kinds[result.kind]++;
    if (result.kind === 'found') assert.match(result.name, /^[a-z0-9._*-]{1,255}$/);
  }
  // Mutations outside the parsed fields keep the hello valid; most others break it.
  assert.ok(kinds.found > 0 && kinds.absent > 0 && kinds.incomplete > 0, JSON.stringify(kinds));
});
