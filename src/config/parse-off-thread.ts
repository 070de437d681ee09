import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { collectYoungGeneration } from '../runtime/young-collection.js';
import { decodeGatewayFile } from './gateway-file.js';
import { addDocumentPiece, DOCUMENT_PIECE_ITEMS, type DocumentPiece } from './document-pieces.js';
import { checkGatewayShape, parseGatewayConfig, type GatewayConfig } from './gateway.js';
import { ConfigRejected, yamlSyntaxIssue, type ConfigIssue } from './schema-validate.js';
import { parseYamlEvents, parseYamlFast, putJsonItems, takeJsonItems } from './yaml-data.js';

/**
 * Below this size gateway.yaml is parsed on the main thread: a worker costs more than the parse.
 * Above it (thousands of routes) the YAML parse takes hundreds of milliseconds, which on a reload
 * would stall every request in flight, so a worker thread parses it (docs/benchmarks.md, "Config
 * scale").
 */
export const OFF_THREAD_PARSE_BYTES = 256 * 1024;

const requireHere = createRequire(import.meta.url);
const JS_YAML_ENTRY = requireHere.resolve('js-yaml');
const YAML_ENTRY = requireHere.resolve('yaml');
/**
 * The module with checkGatewayShape, which the worker imports to check the document's shape too:
 * only the compiled build's (a worker has no TypeScript loader).
 */
const SHAPE_MODULE = import.meta.url.endsWith('.js')
  ? new URL('./gateway.js', import.meta.url).href
  : undefined;
/** Whether the worker checks the shape (the compiled build), for tests. */
export const OFF_THREAD_SHAPE_CHECK = SHAPE_MODULE !== undefined;

/** Items per message of the parsed document: each message is deserialised in its own event-loop turn. */
export const OFF_THREAD_CHUNK_ITEMS = DOCUMENT_PIECE_ITEMS;

/**
 * Plain CommonJS, so the worker needs no TypeScript loader: parseYamlFast's own source and that
 * of the functions it calls (self-contained; `__name` is what a loader that keeps function names may wrap it in),
 * then `yaml`'s parse when the fast path declines — the same reading as parseGatewayConfig — and,
 * in the compiled build, checkGatewayShape (its defaults applied, or its issues sent back).
 * The document goes back in pieces the main thread asks for one at a time (`next`): a 10,000-route
 * document copied in one message stalls the main thread for seconds while it is deserialised.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const __name = (f) => f;
${[parseYamlFast, takeJsonItems, putJsonItems, parseYamlEvents, decodeGatewayFile].map(String).join('\n')}
const pieces = [];
let asked = 0;
let ready = false;
const send = () => {
  for (; ready && asked > 0 && pieces.length > 0; asked--) parentPort.postMessage(pieces.shift());
};
parentPort.on('message', () => {
  asked++;
  send();
});
(async () => {
  let shaped = false;
  try {
    const bytes = workerData.bytes;
    const text = bytes === undefined ? workerData.text : decodeGatewayFile(bytes);
    const fast = parseYamlFast(require(workerData.jsYaml), text);
    let raw = (fast === undefined ? require(workerData.yaml).parse(text) : fast.value) ?? {};
    // Should the module not load here, the main thread checks the shape, as from the sources.
    const checkGatewayShape =
      workerData.shapeModule === undefined
        ? undefined
        : await import(workerData.shapeModule).then((m) => m.checkGatewayShape, () => undefined);
    if (checkGatewayShape !== undefined) {
      try {
        raw = checkGatewayShape(raw);
        shaped = true;
      } catch (err) {
        if (!(err && err.name === 'ConfigRejected' && Array.isArray(err.issues))) throw err;
        pieces.push({ rejected: err.issues });
        raw = undefined;
      }
    }
    if (raw === undefined) {
      // Refused by the shape check: the issues are all there is to send.
    } else if (typeof raw !== 'object' || Array.isArray(raw)) pieces.push({ raw });
    else {
      pieces.push({ raw: {} });
      for (const key of Object.keys(raw)) {
        const value = raw[key];
        if (!Array.isArray(value)) pieces.push({ key, value });
        else {
          pieces.push({ key, value: [] });
          for (let i = 0; i < value.length; i += workerData.chunk) pieces.push({ key, items: value.slice(i, i + workerData.chunk) });
        }
      }
    }
  } catch (err) {
    pieces.push({ error: { message: String(err && err.message), linePos: err && err.linePos } });
  }
  pieces.push({ done: true, shaped });
  ready = true;
  send();
})();
`;

type Piece =
  | DocumentPiece
  | { error: { message: string; linePos?: [{ line: number; col: number }] } }
  | { rejected: ConfigIssue[] }
  | { done: true; shaped: boolean };

/**
 * `parseGatewayConfig`, with the YAML parse of a large file done in a worker thread. `input`: the
 * text, or the file's bytes, which the worker decodes (bytes in a SharedArrayBuffer reach it
 * without a copy: src/config/gateway-file.ts).
 */
export async function parseGatewayConfigOffThread(input: string | Uint8Array): Promise<GatewayConfig> {
  if (input.length < OFF_THREAD_PARSE_BYTES)
    return parseGatewayConfig(typeof input === 'string' ? input : decodeGatewayFile(input));
  let raw: unknown;
  let error: { message: string; linePos?: [{ line: number; col: number }] } | undefined;
  let rejected: ConfigIssue[] | undefined;
  let shaped = false;
  await new Promise<void>((resolve, reject) => {
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: {
        jsYaml: JS_YAML_ENTRY,
        yaml: YAML_ENTRY,
        shapeModule: SHAPE_MODULE,
        ...(typeof input === 'string' ? { text: input } : { bytes: input }),
        chunk: OFF_THREAD_CHUNK_ITEMS,
      },
    });
    worker.on('message', (piece: Piece) => {
      if ('done' in piece) {
        shaped = piece.shaped;
        resolve();
        void worker.terminate();
        return;
      }
      if ('error' in piece) error = piece.error;
      else if ('rejected' in piece) rejected = piece.rejected;
      else raw = addDocumentPiece(raw, piece);
      // The next piece once requests have run and this one is out of the young generation
      // (src/runtime/young-collection.ts): a full young generation of parsed items takes 20 ms to collect.
      setImmediate(() => {
        collectYoungGeneration();
        worker.postMessage('next');
      });
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the YAML parser worker exited with code ${code}`)));
    worker.postMessage('next');
  });
  if (error !== undefined) throw new ConfigRejected([yamlSyntaxIssue(error)]);
  if (rejected !== undefined) throw new ConfigRejected(rejected);
  // The shape check of a whole 10,000-route document is tens of milliseconds in one piece: done in
  // the worker when it can load the compiled module, else here.
  return shaped ? (raw as GatewayConfig) : checkGatewayShape(raw);
}
