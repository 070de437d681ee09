import { Context, type RequestInit } from '../../src/core/context.js';

export interface ContextSeed extends Partial<RequestInit> {
  status?: number;
  responseHeaders?: Record<string, string | string[]>;
  responseBody?: string | Buffer;
  message?: Record<string, unknown>;
}

/** A context with one of everything, so every variable has a subject unless the seed removes it. */
export function makeContext(seed: ContextSeed = {}): Context {
  const { status, responseHeaders, responseBody, message, ...request } = seed;
  const ctx = new Context(
    {
      method: 'POST',
      url: '/orders/42?b=2&a=1&a=3',
      host: 'api.example.com',
      scheme: 'https',
      protocol: 'http2',
      headers: {
        'x-api-key': 'k-123',
        accept: ['application/json', 'text/plain'],
        cookie: 'session=abc; theme=dark',
        'content-type': 'application/x-www-form-urlencoded',
      },
      remoteAddress: '203.0.113.7',
      remotePort: 51234,
      body: Buffer.from('user=ada&role=admin'),
      ...request,
    },
    new AbortController().signal,
  );
  if (status !== undefined) ctx.response.status = status;
  if (responseHeaders !== undefined) ctx.response.headers = { ...responseHeaders };
  if (responseBody !== undefined) ctx.response.body = Buffer.from(responseBody);
  if (message !== undefined) ctx.message = { ...message };
  return ctx;
}
