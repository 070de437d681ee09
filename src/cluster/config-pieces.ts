import { addDocumentPiece, type DocumentPiece } from '../config/document-pieces.js';
import type { GatewayConfig } from '../config/gateway.js';
import { collectYoungGeneration } from '../runtime/young-collection.js';

/**
 * A worker's side of a configuration the primary sends in pieces (protocol.ts `config-piece`,
 * then `config` without the document): one 10,000-route message stalled a worker's requests for
 * about 200 ms while it was read. Pieces of two versions may interleave; a version older than one
 * already taken is superseded.
 */
export class ConfigPieces {
  readonly #docs = new Map<number, unknown>();
  #newest: number;
  #collecting = false;

  constructor(newest = 0) {
    this.#newest = newest;
  }

  /** The version the worker started with (`init`). */
  started(version: number): void {
    this.#newest = Math.max(this.#newest, version);
  }

  add(version: number, piece: DocumentPiece): void {
    this.#docs.set(version, addDocumentPiece(this.#docs.get(version), piece));
    // Each piece out of the young generation before more arrive (src/runtime/young-collection.ts).
    if (!this.#collecting) {
      this.#collecting = true;
      setImmediate(() => {
        this.#collecting = false;
        collectYoungGeneration();
      });
    }
  }

  /**
   * The configuration of `version`: `whole` when the message carried it, else the pieces;
   * undefined when a newer version was taken already (nothing to apply).
   */
  take(version: number, whole: GatewayConfig | undefined): GatewayConfig | undefined {
    const assembled = this.#docs.get(version);
    for (const v of this.#docs.keys()) if (v <= version) this.#docs.delete(v);
    if (version <= this.#newest) return undefined;
    this.#newest = version;
    return whole ?? (assembled as GatewayConfig | undefined) ?? ({} as GatewayConfig);
  }
}
