/**
 * A configuration document sent between threads in pieces, each small enough to (de)serialise in
 * well under a millisecond per hundred items: a 10,000-route document in one message stalls the
 * receiving thread for 50–100 ms. Used by the YAML parser worker (src/config/parse-off-thread.ts,
 * whose worker builds the same pieces in its own source) and the persist worker
 * (src/config/persist-off-thread.ts).
 */
import { nextTurn } from '../runtime/young-collection.js';

/** Items per piece: a few hundred microseconds to (de)serialise. */
export const DOCUMENT_PIECE_ITEMS = 250;

export type DocumentPiece =
  { raw: unknown } | { key: string; value: unknown } | { key: string; items: unknown[] };

/** The pieces of `doc`: its top-level keys, the items of list-valued keys `chunk` at a time. */
export function* documentPieces(doc: unknown, chunk = DOCUMENT_PIECE_ITEMS): Generator<DocumentPiece> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    yield { raw: doc };
    return;
  }
  yield { raw: {} };
  for (const key of Object.keys(doc)) {
    const value = (doc as Record<string, unknown>)[key];
    if (!Array.isArray(value)) {
      yield { key, value };
      continue;
    }
    yield { key, value: [] };
    for (let i = 0; i < value.length; i += chunk) yield { key, items: value.slice(i, i + chunk) };
  }
}

/**
 * Hands `doc` to `send` piece by piece, one per event-loop turn, so the sending thread keeps
 * serving meanwhile; `send` returns false to stop. Resolves whether every piece went.
 */
export async function sendInPieces(doc: unknown, send: (piece: DocumentPiece) => boolean): Promise<boolean> {
  for (const piece of documentPieces(doc)) {
    if (!send(piece)) return false;
    await nextTurn();
  }
  return true;
}

/** Adds one piece to the document being rebuilt (`doc`, undefined before the first); returns it. */
export function addDocumentPiece(doc: unknown, piece: DocumentPiece): unknown {
  if ('raw' in piece) return piece.raw;
  if ('items' in piece) (doc as Record<string, unknown[]>)[piece.key]!.push(...piece.items);
  // Defined, not assigned: a `__proto__` key stays an own key, as in a structured clone.
  else
    Object.defineProperty(doc, piece.key, {
      value: piece.value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return doc;
}
