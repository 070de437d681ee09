/**
 * The persist worker (src/config/persist-off-thread.ts): rebuilds the configuration from its
 * pieces, renders it onto the current gateway.yaml and sends the new file's bytes back in shared
 * memory. Compiled build only.
 */
import { setPriority } from 'node:os';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { addDocumentPiece, type DocumentPiece } from './document-pieces.js';
import type { GatewayConfig } from './gateway.js';
import { decodeGatewayFile } from './gateway-file.js';
import { renderGatewayYaml } from './persist.js';

/** Runs the worker; the module is also loaded by build scripts that read every config module. */
function serve(port: MessagePort, current: Uint8Array | undefined): void {
  // Lowest priority for this thread only (Linux): the main thread, serving requests, runs first.
  try {
    setPriority(19);
  } catch {
    // Not permitted here: the render still runs, at the default priority.
  }
  let doc: unknown;
  port.on('message', (piece: DocumentPiece | { done: true }) => {
    if (!('done' in piece)) {
      doc = addDocumentPiece(doc, piece);
      return;
    }
    try {
      const text = renderGatewayYaml(
        current === undefined ? undefined : decodeGatewayFile(current),
        doc as GatewayConfig,
      );
      const bytes = Buffer.from(new SharedArrayBuffer(Buffer.byteLength(text)));
      bytes.write(text);
      port.postMessage({ bytes });
    } catch (err) {
      port.postMessage({ error: (err as Error).message });
    }
  });
}

if (!isMainThread && parentPort !== null) {
  serve(parentPort, (workerData as { current: Uint8Array | undefined }).current);
}
