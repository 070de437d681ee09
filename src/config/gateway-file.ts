import { readFileSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { ConfigRejected } from './schema-validate.js';

/** gateway.yaml as bytes: compared with the last applied file, decoded where it is parsed. */
export type GatewayFileBytes = Buffer;

function unreadable(path: string, err: unknown): ConfigRejected {
  return new ConfigRejected([{ path: '', message: `cannot read ${path}: ${(err as Error).message}` }]);
}

/** Reads gateway.yaml at startup (nothing in flight to stall); ConfigRejected when it cannot. */
export function readGatewayFile(path: string): GatewayFileBytes {
  try {
    return readFileSync(path);
  } catch (err) {
    throw unreadable(path, err);
  }
}

/**
 * Reads gateway.yaml for a reload, into a SharedArrayBuffer: the parser worker gets the bytes
 * without a copy (copying a 5 MB file into a worker's start message stalls the main thread for
 * 20–50 ms) and decodes them itself. ConfigRejected when it cannot.
 */
export async function readGatewayFileAsync(path: string): Promise<GatewayFileBytes> {
  try {
    return await readSharedFile(path);
  } catch (err) {
    throw unreadable(path, err);
  }
}

/**
 * A file's bytes in a SharedArrayBuffer (fs errors as they come); a file that grows while it is
 * read is read again whole.
 */
export async function readSharedFile(path: string): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const bytes = Buffer.from(new SharedArrayBuffer(size));
    let filled = 0;
    while (filled < size) {
      const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
      if (bytesRead === 0) return bytes.subarray(0, filled);
      filled += bytesRead;
    }
    const more = await handle.read(Buffer.alloc(1), 0, 1, size);
    return more.bytesRead === 0 ? bytes : await readFile(path);
  } finally {
    await handle.close();
  }
}

/** The file's text (UTF-8, a byte-order mark kept, as the YAML parsers expect). */
export function decodeGatewayFile(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}
