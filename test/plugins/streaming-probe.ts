import { request as httpRequest } from 'node:http';
import { gate, startOrigin, type Origin } from '../support/origins.js';

/**
 * An origin that sends one chunk, then holds the rest of a chunked response
 * until the probe releases it: the way to tell a streamed relay (first byte
 * arrives while the origin still holds) from a buffered one.
 */
export interface SlowOrigin {
  origin: Origin;
  /** GETs `url`; resolves with whether the first byte arrived while the origin was still holding, and the full body. */
  probe(
    url: string,
    headers?: Record<string, string>,
  ): Promise<{ streamed: boolean; body: string; headers: Record<string, unknown> }>;
}

/** How long a buffered relay is given before the origin finishes anyway. */
const HOLD_MS = 300;

export async function startSlowOrigin(contentType = 'text/event-stream'): Promise<SlowOrigin> {
  let current = gate();
  const origin = await startOrigin(async (_req, res) => {
    res.writeHead(200, { 'content-type': contentType });
    res.write('data: one\n\n');
    await current.wait;
    res.end('data: two\n\n');
  });
  return {
    origin,
    probe(url, headers = {}) {
      current = gate();
      const held = current;
      let released = false;
      const release = (): void => {
        released = true;
        held.release();
      };
      const timer = setTimeout(release, HOLD_MS);
      return new Promise((resolve, reject) => {
        const req = httpRequest(url, { headers, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          let streamed: boolean | undefined;
          res.on('data', (chunk: Buffer) => {
            if (streamed === undefined) {
              streamed = !released;
              clearTimeout(timer);
              release();
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            resolve({
              streamed: streamed ?? false,
              body: Buffer.concat(chunks).toString('utf8'),
              headers: res.headers,
            }),
          );
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
    },
  };
}
