#!/usr/bin/env node
// A stand-in backend for the examples: no dependencies, answers every request
// with JSON describing it, so you can see what the gateway sent upstream.
//
//   node examples/backend/server.mjs            # listens on 127.0.0.1:9801 and :9802
//   BACKEND_PORTS=7001 node examples/backend/server.mjs
//
// Answer: {"backend": <port>, "method", "path", "query", "headers", "body"}.
// The second port (9802) lets examples with two upstreams (canary, premium)
// show which one answered. A path ending in `/status/<code>` answers with that status, and
// `text/event-stream` requests get three SSE events (for gzip/brotli streaming).
import { createServer } from 'node:http';
import { Buffer } from 'node:buffer';
import { URL } from 'node:url';
import { setInterval, clearInterval } from 'node:timers';
import { withGrpc } from './grpc.mjs';

const host = process.env.BACKEND_HOST ?? '127.0.0.1';
const ports = (process.env.BACKEND_PORTS ?? '9801,9802')
  .split(',')
  .map((p) => Number(p.trim()))
  .filter((p) => Number.isInteger(p) && p >= 0 && p < 65536);

function handler(port) {
  return (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://backend.invalid');
      if (String(req.headers.accept ?? '').includes('text/event-stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        let n = 0;
        const timer = setInterval(() => {
          n++;
          res.write(`data: event ${n}\n\n`);
          if (n === 3) {
            clearInterval(timer);
            res.end();
          }
        }, 100);
        return;
      }
      const status = /(?:^|\/)status\/(\d{3})$/.exec(url.pathname);
      const body = Buffer.concat(chunks).toString('utf8');
      const answer = {
        backend: port,
        method: req.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
      };
      res.writeHead(status ? Number(status[1]) : 200, {
        'content-type': 'application/json',
        'x-powered-by': 'switchyard-example-backend',
      });
      res.end(`${JSON.stringify(answer, null, 2)}\n`);
    });
  };
}

for (const port of ports) {
  // Connections opening with the HTTP/2 preface are gRPC (./grpc.mjs: helloworld.Greeter).
  const server = withGrpc(createServer(handler(port)));
  server.on('error', (err) => {
    console.error(`example backend: cannot listen on ${host}:${port}: ${err.message}`);
    process.exit(1);
  });
  server.listen(port, host, () => {
    const { port: actual } = server.address();
    // One line per port, parsed by tests: "example backend listening on 127.0.0.1:9801".
    console.log(`example backend listening on ${host}:${actual}`);
  });
}

const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
