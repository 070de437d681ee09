import { isDeepStrictEqual } from 'node:util';
import type { GatewayConfig } from './gateway.js';

/** A line of a block sequence holding one item as JSON: `  - {"name": "r1", …}`. */
const JSON_ITEM = /^( *- )(\{.*\})[ ]*$/;
/** A top-level key line opening a section: `routes:` (a comment after it allowed). */
const SECTION = /^([A-Za-z_][A-Za-z0-9_]*):[ ]*(#.*)?$/;
/** A top-level key of an empty list: `stores: []`. */
const EMPTY_SECTION = /^([A-Za-z_][A-Za-z0-9_]*):[ ]*\[\][ ]*(#.*)?$/;

interface Block {
  /** Index of the section's first item line, and one past its last. */
  from: number;
  to: number;
  prefix: string;
}

/**
 * The item lines of each top-level section written as one-line JSON items and nothing else
 * (how generated configurations with thousands of routes are written), checked against the
 * parsed file `raw`; undefined when the file has any other shape.
 */
function jsonBlocks(lines: string[], raw: Record<string, unknown>): Map<string, Block> | undefined {
  const blocks = new Map<string, Block>();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line === '' || line.startsWith('#')) {
      i++;
      continue;
    }
    const empty = EMPTY_SECTION.exec(line);
    if (empty !== null) {
      const items = raw[empty[1]!];
      if (!Array.isArray(items) || items.length > 0) return undefined;
      i++;
      continue;
    }
    const section = SECTION.exec(line);
    if (section === null) return undefined;
    const key = section[1]!;
    const items = raw[key];
    if (!Array.isArray(items) || items.length === 0 || blocks.has(key)) return undefined;
    const from = i + 1;
    let to = from;
    let prefix: string | undefined;
    while (to < lines.length && JSON_ITEM.test(lines[to]!)) {
      const [, itemPrefix, json] = JSON_ITEM.exec(lines[to]!)!;
      prefix ??= itemPrefix;
      if (itemPrefix !== prefix) return undefined;
      let value: unknown;
      try {
        value = JSON.parse(json!);
      } catch {
        return undefined;
      }
      if (!isDeepStrictEqual(value, items[to - from])) return undefined;
      to++;
    }
    if (prefix === undefined || to - from !== items.length) return undefined;
    blocks.set(key, { from, to, prefix });
    i = to;
  }
  return blocks;
}

/**
 * gateway.yaml with `target` written in, for a file whose sections are all one-line JSON items:
 * an unchanged item keeps its line, a changed or new one is written as one JSON line. Undefined
 * when the file has another shape, or the change is more than items of existing sections (the
 * caller then merges through the YAML syntax tree, at about 2 ms of CPU per KiB). `raw` is the
 * file as parsed, `before` the same with the loader's defaults; the caller verifies the result
 * reads back as `target`.
 */
export function spliceJsonLines(
  text: string,
  raw: unknown,
  before: GatewayConfig,
  target: GatewayConfig,
): string | undefined {
  const plain = typeof raw === 'object' && raw !== null && !Array.isArray(raw);
  if (!plain || text.includes('\r') || !text.endsWith('\n')) return undefined;
  const lines = text.slice(0, -1).split('\n');
  const blocks = jsonBlocks(lines, raw as Record<string, unknown>);
  if (blocks === undefined) return undefined;
  const sections = target as unknown as Record<string, unknown[]>;
  const previous = before as unknown as Record<string, unknown[]>;
  const changed = Object.keys(sections).filter((key) => !isDeepStrictEqual(previous[key], sections[key]));
  // A section the file does not write, or one emptied: left to the full merge.
  if (changed.some((key) => !blocks.has(key) || sections[key]!.length === 0)) return undefined;
  const out: string[] = [];
  let at = 0;
  // In file order: blocks were found top to bottom.
  for (const [key, block] of blocks) {
    out.push(...lines.slice(at, block.from));
    at = block.to;
    if (!changed.includes(key)) {
      out.push(...lines.slice(block.from, block.to));
      continue;
    }
    const after = sections[key]!;
    const olds = previous[key] ?? [];
    const byName = new Map<unknown, number>();
    olds.forEach((item, index) => byName.set((item as { name?: unknown }).name, index));
    for (const item of after) {
      const index = byName.get((item as { name?: unknown }).name);
      out.push(
        index !== undefined && isDeepStrictEqual(olds[index], item)
          ? lines[block.from + index]!
          : `${block.prefix}${JSON.stringify(item)}`,
      );
    }
  }
  out.push(...lines.slice(at));
  return `${out.join('\n')}\n`;
}
