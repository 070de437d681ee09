import { request as httpRequest } from 'node:http';
import { gate, startOrigin, type Origin } from '../support/origins.js';

export interface ProbeResult<B> {
  /** The first byte arrived while the origin was still holding the rest. */
  streamed: boolean;
  body: B;
  headers: Record<string, unknown>;
}

/**
 * An origin that sends one chunk, then holds the rest of a chunked response
 * until the probe releases it: the way to tell a streamed relay (first byte
 * arrives while the origin still holds) from a buffered one.
 */
export interface SlowOrigin {
  origin: Origin;
  /** GETs `url` and reports whether the first byte beat the end of the response, with the body as text. */
  probe(url: string, headers?: Record<string, string>): Promise<ProbeResult<string>>;
  /** Same, with the body as received (compressed bodies). */
  probeRaw(url: string, headers?: Record<string, string>): Promise<ProbeResult<Buffer>>;
}

/** How long a buffered relay is given before the origin finishes anyway. */
const HOLD_MS = 1000;

export async function startSlowOrigin(contentType = 'text/event-stream'): Promise<SlowOrigin> {
  let current = gate();
  const origin = await startOrigin(async (_req, res) => {
    res.writeHead(200, { 'content-type': contentType });
    res.write('data: one\n\n');
    await current.wait;
    res.end('data: two\n\n');
  });

  const probeRaw = (url: string, headers: Record<string, string> = {}): Promise<ProbeResult<Buffer>> => {
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
          resolve({ streamed: streamed ?? false, body: Buffer.concat(chunks), headers: res.headers }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  };

  return {
    origin,
    probeRaw,
    async probe(url, headers = {}) {
      const result = await probeRaw(url, headers);
      return { ...result, body: result.body.toString('utf8') };
    },
  };
}
