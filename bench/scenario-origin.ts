// Origin of `npm run bench:scenarios`: bench/origin.ts's 42-byte JSON answer on every path, keep-alive;
// a request carrying `x-probe: 1` (sent only by the correctness probes, never by the load) is answered
// with the request's path and headers as JSON instead, so a probe sees what the proxy forwarded.
import { createServer } from 'node:http';

const hello = Buffer.from('{"hello":"world","service":"bench-origin"}');
const server = createServer((req, res) => {
  req.resume();
  const body =
    req.headers['x-probe'] === undefined
      ? hello
      : Buffer.from(JSON.stringify({ path: req.url, headers: req.headers }));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
