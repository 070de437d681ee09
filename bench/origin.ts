// Benchmark origin: a small fixed response, keep-alive, as cheap as node:http allows.
import { createServer } from 'node:http';

const body = Buffer.from('{"hello":"world","service":"bench-origin"}');
const server = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
