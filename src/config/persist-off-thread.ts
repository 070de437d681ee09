import { Worker } from 'node:worker_threads';
import { sendInPieces } from './document-pieces.js';
import type { GatewayConfig } from './gateway.js';

/**
 * From this size of the current gateway.yaml up, an Admin write renders the new file in a worker
 * thread: the comment-keeping render costs about 2 ms of CPU per KiB (35 ms for 11 KiB, seconds
 * for megabytes), which on the main thread would stall every request in flight
 * (docs/admin-api.md#persistence).
 */
export const OFF_THREAD_RENDER_BYTES = 16 * 1024;

/** The worker's module: only in the compiled build (a worker has no TypeScript loader). */
const WORKER_MODULE = import.meta.url.endsWith('.js')
  ? new URL('./persist-worker.js', import.meta.url)
  : undefined;

/** Whether renders of large files leave the main thread (the compiled build), for tests. */
export const OFF_THREAD_RENDER = WORKER_MODULE !== undefined;

let rendered = 0;
/** How many files this process has rendered in a worker, for tests. */
export const renderedOffThread = (): number => rendered;

/**
 * `renderGatewayYaml(current, config)` in a worker thread, as UTF-8 bytes in shared memory;
 * undefined when this build cannot start the worker (run from the sources).
 */
export async function renderOffThread(
  current: Uint8Array | undefined,
  config: GatewayConfig,
): Promise<Buffer | undefined> {
  if (WORKER_MODULE === undefined) return undefined;
  const worker = new Worker(WORKER_MODULE, { workerData: { current }, execArgv: [] });
  try {
    const answer = new Promise<Buffer>((resolve, reject) => {
      worker.once('message', (message: { bytes: Uint8Array } | { error: string }) => {
        if ('error' in message) reject(new Error(`rendering gateway.yaml: ${message.error}`));
        else resolve(Buffer.from(message.bytes.buffer, message.bytes.byteOffset, message.bytes.byteLength));
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the persist worker exited with code ${code}`)));
    });
    // Keeps a failure while sending from surfacing as an unhandled rejection.
    answer.catch(() => undefined);
    await sendInPieces(config, (piece) => {
      worker.postMessage(piece);
      return true;
    });
    worker.postMessage({ done: true });
    const bytes = await answer;
    rendered++;
    return bytes;
  } finally {
    void worker.terminate();
  }
}
