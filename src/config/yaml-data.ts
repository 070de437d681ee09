import { createRequire } from 'node:module';
import * as jsYaml from 'js-yaml';
import type * as Yaml from 'yaml';

/**
 * Configuration files are parsed into plain data by js-yaml, several times faster than the `yaml`
 * package, whose `parse` defines what a file means (YAML 1.2 core schema: `yes`/`no` are strings,
 * `<<` is an ordinary key, a duplicate key is an error). The fast path only takes a text whose
 * meaning both libraries agree on, and hands everything else to `yaml`:
 *
 * - a syntax error, an empty text or more than one document: `yaml` reports it (its messages carry
 *   line and column) or returns `null` for an empty one;
 * - a `%YAML`/`%TAG` directive, an explicit tag (`!!float 1`, `!custom x`) or an alias (`*ref`):
 *   the libraries resolve tags differently and limit aliases differently (`yaml` refuses an
 *   expansion of more than 100 nodes);
 * - a block mapping key longer than 1,000 characters (`yaml` refuses one over 1,024);
 * - a plain number too large for a double (`yaml` reads `9e999` as Infinity, js-yaml as a string).
 *
 * Positions (file:line:column of a config error, yaml-locate.ts) and comment-keeping writes
 * (persist.ts) still use `yaml`'s Document API. test/config/yaml-fast-path.test.ts proves both
 * parsers give the same data for every YAML file of the repository. docs/benchmarks.md, "Config
 * scale", has the figures.
 */

type YamlModule = typeof Yaml;
let yamlModule: YamlModule | undefined;

/** The `yaml` package, loaded on first use: most starts never need it. */
export function yamlLibrary(): YamlModule {
  yamlModule ??= createRequire(import.meta.url)('yaml') as YamlModule;
  return yamlModule;
}

/** Exactly `parse(text)` of the `yaml` package (throws its YAMLParseError), faster. */
export function parseYamlData(text: string): unknown {
  const fast = parseYamlFast(jsYaml, text);
  return fast === undefined ? yamlLibrary().parse(text) : fast.value;
}

/** What parseYamlFast uses of js-yaml (passed in, so the function also runs in a worker thread). */
export interface JsYamlApi {
  parseEvents: typeof jsYaml.parseEvents;
  constructFromEvents: typeof jsYaml.constructFromEvents;
  EVENT_ID: typeof jsYaml.EVENT_ID;
  SCALAR_STYLE: typeof jsYaml.SCALAR_STYLE;
  CORE_SCHEMA: typeof jsYaml.CORE_SCHEMA;
}

/**
 * js-yaml's reading of `text`, or undefined when `yaml` must decide (see the module comment).
 * Self-contained (no reference outside its parameters, no inner functions): parse-off-thread.ts
 * runs its source text in a worker thread.
 */
export function parseYamlFast(lib: JsYamlApi, text: string): { value: unknown } | undefined {
  // Rare: a number too large for a double, which js-yaml keeps as a string and `yaml` makes ±Infinity.
  const hugeNumbers = /[0-9]{300}|[0-9.][eE][+-]?[0-9]{3}/.test(text);
  let events: ReturnType<JsYamlApi['parseEvents']>;
  try {
    events = lib.parseEvents(text, {});
  } catch {
    return undefined;
  }
  const ID = lib.EVENT_ID;
  const PLAIN = lib.SCALAR_STYLE.PLAIN;
  // Per open collection: entries seen so far in a mapping (even: the next one is a key), -1 otherwise.
  const open: number[] = [];
  let documents = 0;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    if (event.type === ID.POP) {
      open.pop();
      continue;
    }
    if (event.type === ID.DOCUMENT) {
      documents++;
      if (event.directives.length > 0) return undefined;
      open.push(-1);
      continue;
    }
    if (event.type === ID.ALIAS || event.tagStart !== -1) return undefined;
    const top = open.length - 1;
    let isKey = false;
    if (top >= 0 && open[top]! >= 0) {
      isKey = open[top]! % 2 === 0;
      open[top] = open[top]! + 1;
    }
    if (event.type === ID.SCALAR) {
      if (isKey && event.valueEnd - event.valueStart > 1000) return undefined;
      if (hugeNumbers && event.style === PLAIN) {
        const plain = text.slice(event.valueStart, event.valueEnd);
        if (
          /^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$/.test(plain) &&
          !Number.isFinite(Number(plain))
        )
          return undefined;
      }
    } else open.push(event.type === ID.MAPPING ? 0 : -1);
  }
  if (documents !== 1) return undefined;
  try {
    const docs = lib.constructFromEvents(events, { source: text, schema: lib.CORE_SCHEMA });
    return docs.length === 1 ? { value: docs[0] } : undefined;
  } catch {
    return undefined;
  }
}
