// gRPC for the stand-in backend (examples/backend/server.mjs): a connection
// that opens with the HTTP/2 preface (h2c, prior knowledge, as gRPC clients and
// the gateway's `scheme: grpc` upstream send) is served here, anything else by
// the JSON echo. No dependencies: the one service is encoded by hand.
//
//   service helloworld.Greeter (examples/grpc-transcode/helloworld.proto)
//     SayHello(HelloRequest{name}) → HelloReply{message: "hello <name>"}
//     SayHelloStream(HelloRequest{name}) → three replies "hello <name> #1".."#3"
//   An empty name answers INVALID_ARGUMENT (3) "name is required", trailers-only.
import { createServer as createNetServer } from 'node:net';
import { createServer as createH2Server } from 'node:http2';
import { Buffer } from 'node:buffer';

/** Wraps the HTTP/1.1 server: one port speaks both. */
export function withGrpc(httpServer) {
  const h2 = createH2Server();
  h2.on('stream', serveGrpc);
  h2.on('sessionError', () => {});
  return createNetServer((socket) => {
    socket.once('data', (first) => {
      socket.pause();
      if (first.toString('latin1', 0, 3) === 'PRI') {
        // The HTTP/2 session takes over what is buffered on the socket.
        socket.unshift(first);
        h2.emit('connection', socket);
      } else {
        // The HTTP/1.1 parser reads the socket's handle itself: hand it the bytes already read.
        httpServer.emit('connection', socket);
        socket.emit('data', first);
        socket.resume();
      }
    });
    socket.on('error', () => socket.destroy());
  });
}

function serveGrpc(stream, headers) {
  const path = String(headers[':path'] ?? '');
  const chunks = [];
  stream.on('data', (c) => chunks.push(c));
  stream.on('error', () => {});
  stream.on('end', () => {
    const status = (code, message) =>
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(code),
          'grpc-message': encodeURIComponent(message),
        },
        { endStream: true },
      );
    const method = /^\/helloworld\.Greeter\/(SayHello|SayHelloStream)$/.exec(path)?.[1];
    if (method === undefined) return status(12, `unknown method ${path}`);
    const body = Buffer.concat(chunks);
    if (body.length < 5) return status(13, 'no request message');
    const name = readString(body.subarray(5, 5 + body.readUInt32BE(1)), 1);
    if (name === '') return status(3, 'name is required');
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    const replies = method === 'SayHello' ? [`hello ${name}`] : [1, 2, 3].map((i) => `hello ${name} #${i}`);
    for (const message of replies) stream.write(frame(stringField(1, message)));
    stream.end();
  });
}

/** Field `number` of wire type 2 (a string), first occurrence; '' when absent. */
function readString(message, number) {
  let at = 0;
  while (at < message.length) {
    const [key, afterKey] = varint(message, at);
    const type = key & 7;
    at = afterKey;
    if (type === 2) {
      const [length, afterLength] = varint(message, at);
      if (key >> 3 === number) return message.toString('utf8', afterLength, afterLength + length);
      at = afterLength + length;
    } else if (type === 0) at = varint(message, at)[1];
    else if (type === 1) at += 8;
    else if (type === 5) at += 4;
    else break;
  }
  return '';
}

function varint(buf, at) {
  let value = 0;
  let shift = 0;
  while (at < buf.length) {
    const b = buf[at++];
    value += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) break;
    shift += 7;
  }
  return [value, at];
}

function stringField(number, text) {
  const bytes = Buffer.from(text, 'utf8');
  const length = [];
  let n = bytes.length;
  while (n >= 0x80) {
    length.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  length.push(n);
  return Buffer.concat([Buffer.from([(number << 3) | 2, ...length]), bytes]);
}

function frame(message) {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}
