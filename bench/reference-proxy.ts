// The in-run reference: the least a Node.js reverse proxy can do (node:http in, undici pool out).
import { createServer } from 'node:http';
import { pipeline } from 'node:stream';
import { Pool } from 'undici';

const upstream = new Pool(`http://127.0.0.1:${process.env.UPSTREAM_PORT}`, { connections: 128 });
const server = createServer((req, res) => {
  upstream.request(
    {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      // Only requests that carry a body stream one: a GET sent with a stream body goes out chunked.
      body:
        req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined
          ? req
          : null,
    },
    (err, data) => {
      if (err) {
        res.writeHead(502);
        res.end();
        return;
      }
      res.writeHead(data.statusCode, data.headers);
      pipeline(data.body, res, () => undefined);
    },
  );
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
