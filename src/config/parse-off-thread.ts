import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { checkGatewayShape, parseGatewayConfig, type GatewayConfig } from './gateway.js';
import { ConfigRejected, yamlSyntaxIssue } from './schema-validate.js';
import { parseYamlFast } from './yaml-data.js';

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
 * Plain CommonJS, so the worker needs no TypeScript loader: parseYamlFast's own source (a
 * self-contained function; `__name` is what a loader that keeps function names may wrap it in),
 * then `yaml`'s parse when the fast path declines — the same reading as parseGatewayConfig.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const __name = (f) => f;
const parseYamlFast = ${parseYamlFast.toString()};
try {
  const fast = parseYamlFast(require(workerData.jsYaml), workerData.text);
  const raw = fast === undefined ? require(workerData.yaml).parse(workerData.text) : fast.value;
  parentPort.postMessage({ raw: raw ?? {}, fast: fast !== undefined });
} catch (err) {
  parentPort.postMessage({ error: { message: String(err && err.message), linePos: err && err.linePos } });
}
`;

type Reply =
  | { raw: unknown; fast: boolean }
  | { error: { message: string; linePos?: [{ line: number; col: number }] } };

/** `parseGatewayConfig`, with the YAML parse of a large file done in a worker thread. */
export async function parseGatewayConfigOffThread(text: string): Promise<GatewayConfig> {
  if (text.length < OFF_THREAD_PARSE_BYTES) return parseGatewayConfig(text);
  const reply = await new Promise<Reply>((resolve, reject) => {
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { jsYaml: JS_YAML_ENTRY, yaml: YAML_ENTRY, text },
    });
    worker.once('message', (message: Reply) => {
      resolve(message);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the YAML parser worker exited with code ${code}`)));
  });
  if ('error' in reply) throw new ConfigRejected([yamlSyntaxIssue(reply.error)]);
  return checkGatewayShape(reply.raw);
}
