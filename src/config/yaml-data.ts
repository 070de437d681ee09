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
 * - a null key (`null:`, `~:`, `: 1`, `{: 1}`): js-yaml reads the key "null", `yaml` reads "";
 * - a plain number too large for a double (`yaml` reads `9e999` as Infinity, js-yaml as a string).
 *
 * One-line JSON items of a block sequence (`  - {"name": "r1", …}`, as generated configurations
 * are often written) are read by JSON.parse rather than by either YAML parser (takeJsonItems).
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
 * Items of a block sequence written as one-line JSON (`  - {"name": "r1", …}`, how generated
 * configurations with thousands of routes are usually written) are read by JSON.parse, which YAML
 * 1.2 reads the same way, and the rest of the text by js-yaml (takeJsonItems, putJsonItems).
 * Self-contained (no reference outside its parameters but the three functions below, no inner
 * functions): parse-off-thread.ts runs their source text in a worker thread.
 */
export function parseYamlFast(lib: JsYamlApi, text: string): { value: unknown } | undefined {
  const json = takeJsonItems(text);
  if (json !== undefined) {
    const outline = parseYamlEvents(lib, json.outline);
    if (outline !== undefined && putJsonItems(outline.value, json.mark, json.runs)) return outline;
  }
  return parseYamlEvents(lib, text);
}

/**
 * The one-line JSON items of block sequences taken out of `text`. Each run of such items on
 * consecutive lines at one indentation (entries of one sequence) is replaced in `outline` by one
 * item, a plain scalar `${mark}${index}`; `runs[index]` holds the run's values. Undefined when
 * there is none, or when JSON.parse and YAML could read an item differently: a duplicate key
 * (JSON keeps the last, YAML refuses), a key over 1,000 characters (`yaml` refuses implicit keys
 * over 1,024). A line with a tab or `__proto__` stays in the outline (YAML's separation rules and
 * the readers' handling of that key differ). Numbers, escapes (`\uXXXX`, `\/`, …) and
 * `true`/`false`/`null` are read the same by both; a double-quoted YAML scalar accepts every
 * character a JSON string does.
 */
export function takeJsonItems(
  text: string,
): { outline: string; mark: string; runs: unknown[][] } | undefined {
  const mark = '__json_items_';
  if (text.includes(mark) || !/^ *- [[{]/m.test(text)) return undefined;
  const pieces: string[] = [];
  const runs: unknown[][] = [];
  const line = /^( *- )([[{].*)$/gm;
  let last = 0;
  // The run being collected: its values, its lines' `  - ` prefix, where its last line ends.
  let run: unknown[] | undefined;
  let runPrefix = '';
  let runEnd = 0;
  for (let m = line.exec(text); m !== null; m = line.exec(text)) {
    const json = m[2]!;
    if (json.includes('\t') || json.includes('__proto__')) continue;
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      continue;
    }
    // Keys written in the text (a string followed by `:`), none over 1,000 characters.
    let written = 0;
    for (let i = 0; i < json.length; i++) {
      if (json.charCodeAt(i) !== 34) continue;
      const start = i;
      // The closing quote: one not escaped by an odd run of backslashes.
      for (;;) {
        i = json.indexOf('"', i + 1);
        let slash = i - 1;
        while (json.charCodeAt(slash) === 92) slash--;
        if ((i - 1 - slash) % 2 === 0) break;
      }
      let next = i + 1;
      while (json.charCodeAt(next) === 32) next++;
      if (json.charCodeAt(next) === 58) {
        if (i - start > 1000) return undefined;
        written++;
      }
    }
    // Keys JSON.parse kept: fewer means a duplicate key, which YAML refuses.
    let kept = 0;
    const open: unknown[] = [value];
    while (open.length > 0) {
      const node = open.pop();
      if (Array.isArray(node)) {
        for (const child of node) if (typeof child === 'object' && child !== null) open.push(child);
      } else {
        for (const key in node as Record<string, unknown>) {
          kept++;
          const child = (node as Record<string, unknown>)[key];
          if (typeof child === 'object' && child !== null) open.push(child);
        }
      }
    }
    if (kept !== written) return undefined;
    const at = m.index + m[1]!.length;
    const gap = m.index - runEnd;
    const adjacent =
      run !== undefined &&
      m[1] === runPrefix &&
      ((gap === 1 && text.charCodeAt(runEnd) === 10) ||
        (gap === 2 && text.charCodeAt(runEnd) === 13 && text.charCodeAt(runEnd + 1) === 10));
    if (adjacent) run!.push(value);
    else {
      if (run !== undefined) last = runEnd;
      pieces.push(text.slice(last, at), mark, String(runs.length));
      run = [value];
      runs.push(run);
      runPrefix = m[1]!;
    }
    runEnd = at + json.length;
  }
  if (run === undefined) return undefined;
  pieces.push(text.slice(runEnd));
  return { outline: pieces.join(''), mark, runs };
}

/**
 * Puts the runs of JSON items back in place of their marks in `value` (the outline's reading), in
 * place. False unless every mark was read as a whole sequence item, once: a mark inside a block
 * scalar, a multi-line string or a key means its lines were not the sequence items they looked
 * like, and the whole text must be read by js-yaml instead.
 */
export function putJsonItems(value: unknown, mark: string, runs: unknown[][]): boolean {
  let placed = 0;
  const taken = new Uint8Array(runs.length);
  const open: unknown[] = [value];
  while (open.length > 0) {
    const node = open.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (!Array.isArray(node)) {
      for (const key in node as Record<string, unknown>) open.push((node as Record<string, unknown>)[key]);
      continue;
    }
    let items: unknown[] | undefined;
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (typeof child === 'string' && child.startsWith(mark)) {
        const digits = child.slice(mark.length);
        const index = Number(digits);
        if (!(index >= 0 && index < runs.length) || String(index) !== digits || taken[index] === 1)
          return false;
        taken[index] = 1;
        placed++;
        // The items before this one, then the run.
        items ??= node.slice(0, i);
        for (const item of runs[index]!) items.push(item);
      } else {
        items?.push(child);
        open.push(child);
      }
    }
    if (items !== undefined) {
      node.length = 0;
      for (const item of items) node.push(item);
    }
  }
  return placed === runs.length;
}

/** js-yaml's reading of `text` through its events, or undefined when `yaml` must decide. */
export function parseYamlEvents(lib: JsYamlApi, text: string): { value: unknown } | undefined {
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
      // A null key (`null:`, `~:`, `:`, `{: 1}`): js-yaml makes it "null", `yaml` makes it "" (F-8).
      if (
        isKey &&
        event.style === PLAIN &&
        /^(?:null|Null|NULL|~|)$/.test(text.slice(event.valueStart, event.valueEnd))
      )
        return undefined;
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
