// Benchmark origin: a fixed response, keep-alive, as cheap as node:http allows.
// GET /16k answers a 16 KiB body; every other path the small /hello-style JSON body.
import { createServer } from 'node:http';

const hello = Buffer.from('{"hello":"world","service":"bench-origin"}');
const sixteenK = Buffer.alloc(16 * 1024, 'x');
const server = createServer((req, res) => {
  req.resume();
  const body = req.url === '/16k' ? sixteenK : hello;
  const type = body === hello ? 'application/json' : 'application/octet-stream';
  res.writeHead(200, { 'content-type': type, 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
