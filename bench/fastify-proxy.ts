/**
 * The framework peer of `npm run bench`: fastify with @fastify/http-proxy
 * (through @fastify/reply-from) forwarding every path to the origin, set up
 * for speed: logging off, the undici upstream client (an Agent of keep-alive
 * pools, 128 connections, no pipelining), keep-alive on the inbound side.
 *
 * Environment: UPSTREAM_PORT (required), PORT (default 0). Prints
 * `listening <port>` once bound.
 */
import fastifyHttpProxy from '@fastify/http-proxy';
import Fastify from 'fastify';

const upstreamPort = Number(process.env.UPSTREAM_PORT);
if (!Number.isInteger(upstreamPort) || upstreamPort <= 0) throw new Error('UPSTREAM_PORT is required');

const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });
await app.register(fastifyHttpProxy, {
  upstream: `http://127.0.0.1:${upstreamPort}`,
  undici: { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 },
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
