import { randomBytes } from 'node:crypto';
import { open, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Document, isMap, isNode, isScalar, isSeq, parse, parseDocument, type Node } from 'yaml';
import { checkGatewayShape, type GatewayConfig } from './gateway.js';
import { decodeGatewayFile, readSharedFile } from './gateway-file.js';
import { spliceJsonLines } from './persist-json-lines.js';
import { keepUnchangedLines } from './persist-keep-lines.js';
import { parseYamlData } from './yaml-data.js';
import { OFF_THREAD_RENDER_BYTES, renderOffThread } from './persist-off-thread.js';

const TO_STRING = { lineWidth: 0 } as const;

type Json = unknown;

const isObject = (v: Json): v is Record<string, Json> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Normalizes like the loader does (defaults, coercions) so that two forms of one config compare equal. */
function normalize(value: unknown): GatewayConfig | undefined {
  try {
    return checkGatewayShape(structuredClone(value ?? {}));
  } catch {
    return undefined;
  }
}

/**
 * Renders `next` as gateway.yaml on top of `currentText`: every part whose
 * value did not change keeps its YAML node (comments, flow style, `${ENV}`
 * placeholders, key order); changed items are rebuilt, keeping the comments
 * around them, and every line whose value did not change keeps its bytes
 * (persist-keep-lines.ts). The result always parses back to `next`; when the surgical
 * merge cannot guarantee that (aliases, a broken file), the whole document is
 * written fresh.
 */
export function renderGatewayYaml(currentText: string | undefined, next: GatewayConfig): string {
  const target = normalize(next);
  if (target === undefined) throw new Error('refusing to persist a configuration of the wrong shape');
  const spliced = currentText === undefined ? undefined : spliceLines(currentText, target);
  if (spliced !== undefined) return spliced;
  const merged = currentText === undefined ? undefined : mergeIntoText(currentText, target);
  const readsBack = (text: string | undefined): text is string =>
    text !== undefined && isDeepStrictEqual(normalize(safeParse(text)), target);
  if (readsBack(merged)) {
    // The untouched lines byte for byte, not as the yaml library re-renders them (F22).
    const kept = keepUnchangedLines(currentText!, merged);
    return readsBack(kept) ? kept : merged;
  }
  return new Document(target).toString(TO_STRING);
}

/**
 * A file of one-line JSON items with `target` spliced in line by line (persist-json-lines.ts), when
 * it reads back as `target` the way the gateway reads files (parseYamlData); else undefined.
 */
function spliceLines(text: string, target: GatewayConfig): string | undefined {
  const raw = safeParse(text, parseYamlData);
  const before = raw === undefined ? undefined : normalize(raw);
  const spliced = before === undefined ? undefined : spliceJsonLines(text, raw, before, target);
  const back = spliced === undefined ? undefined : safeParse(spliced, parseYamlData);
  return back !== undefined && isDeepStrictEqual(normalize(back), target) ? spliced : undefined;
}

/** `read(text)`, or undefined when it throws (a file that does not parse). */
function safeParse(text: string, read: (text: string) => unknown = parse): unknown {
  try {
    return read(text);
  } catch {
    return undefined;
  }
}

function mergeIntoText(text: string, target: GatewayConfig): string | undefined {
  const doc: Document = parseDocument(text);
  if (doc.errors.length > 0) return undefined;
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) {
    const fresh = doc.createNode(prune(target));
    fresh.commentBefore = doc.contents?.commentBefore ?? null;
    doc.contents = fresh;
    return doc.toString(TO_STRING);
  }
  if (!isMap(doc.contents)) return undefined;
  const before = normalize(doc.toJS());
  if (before === undefined) return undefined;
  try {
    mergeNode(doc, doc.contents, before, target);
    return doc.toString(TO_STRING);
  } catch {
    return undefined;
  }
}

/** Empty top-level sections are not written into a new file. */
function prune(config: GatewayConfig): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).filter(([, v]) => !Array.isArray(v) || v.length > 0));
}

/** The key that identifies items of a list across versions: `name` (resources), `id` (nodes). */
function identityKey(before: Json[], after: Json[]): string | undefined {
  for (const key of ['name', 'id']) {
    const all = [...before, ...after].every((v) => isObject(v) && typeof v[key] === 'string');
    if (all) return key;
  }
  return undefined;
}

function rebuild(doc: Document, old: unknown, value: Json): Node {
  const fresh = doc.createNode(value);
  if (isNode(old)) {
    fresh.commentBefore = old.commentBefore ?? null;
    fresh.comment = old.comment ?? null;
    if (old.spaceBefore === true) fresh.spaceBefore = true;
  }
  return fresh;
}

/**
 * Returns the node for `after`, reusing `node` (which currently holds
 * `before`) where values are equal and editing maps and lists in place.
 */
function mergeNode(doc: Document, node: unknown, before: Json, after: Json): Node {
  if (isNode(node) && isDeepStrictEqual(before, after)) return node;
  if (isMap(node) && isObject(before) && isObject(after)) {
    const seen = new Set<string>();
    node.items = node.items.filter((pair) => {
      const key = isScalar(pair.key) ? pair.key.value : pair.key;
      return typeof key === 'string' && Object.hasOwn(after, key);
    });
    for (const pair of node.items) {
      const key = (pair.key as { value: string }).value;
      seen.add(key);
      pair.value = mergeNode(doc, pair.value, before[key], after[key]);
    }
    for (const [key, value] of Object.entries(after)) {
      // A key the file never wrote but whose default equals the new value stays unwritten.
      if (seen.has(key) || isDeepStrictEqual(before[key], value)) continue;
      node.set(key, doc.createNode(value));
    }
    return node;
  }
  if (isSeq(node) && Array.isArray(before) && Array.isArray(after)) {
    const key = identityKey(before, after);
    if (key !== undefined) {
      const nodes = new Map<string, unknown>();
      for (const item of node.items) {
        const id = isMap(item) ? item.get(key) : undefined;
        if (typeof id === 'string' && !nodes.has(id)) nodes.set(id, item);
      }
      const values = new Map(before.map((b) => [(b as Record<string, string>)[key], b]));
      node.items = after.map((a) => {
        const id = (a as Record<string, string>)[key] as string;
        const old = nodes.get(id);
        return old !== undefined && values.has(id)
          ? mergeNode(doc, old, values.get(id), a)
          : rebuild(doc, undefined, a);
      });
      return node;
    }
    if (node.items.length === before.length) {
      node.items = after.map((a, i) =>
        i < before.length ? mergeNode(doc, node.items[i], before[i], a) : rebuild(doc, undefined, a),
      );
      return node;
    }
  }
  return rebuild(doc, node, after);
}

/**
 * Writes `text` to `path` so that a crash leaves either the old or the new
 * file, never a torn one: temp file in the same directory, fsync, rename over,
 * fsync the directory. A symlinked path keeps its link; the target is replaced.
 */
export async function writeFileAtomic(path: string, text: string | Uint8Array): Promise<void> {
  const target = await realpath(path).catch(() => path);
  const dir = dirname(target);
  const temp = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const mode = await stat(target).then(
    (s) => s.mode & 0o777,
    () => 0o644,
  );
  const handle = await open(temp, 'wx', mode);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(temp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dir);
}

async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    // Some platforms and file systems cannot fsync a directory; the rename is still atomic there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EACCES') throw err;
  } finally {
    await handle?.close();
  }
}

/**
 * Writes `config` back to gateway.yaml, preserving what did not change; a file of
 * OFF_THREAD_RENDER_BYTES or more is rendered in a worker thread. `announce(bytes)` runs just
 * before the new file appears (so a watcher can recognize our own write) and again with the old
 * bytes if writing fails. Returns the bytes now on disk.
 */
export async function persistGatewayConfig(
  path: string,
  config: GatewayConfig,
  announce: (bytes: Buffer) => void = () => undefined,
): Promise<Buffer> {
  let current: Buffer | undefined;
  try {
    current = await readSharedFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const large = current !== undefined && current.length >= OFF_THREAD_RENDER_BYTES;
  const rendered =
    (large ? await renderOffThread(current, config) : undefined) ??
    Buffer.from(renderGatewayYaml(current === undefined ? undefined : decodeGatewayFile(current), config));
  if (current?.equals(rendered) === true) return rendered;
  announce(rendered);
  try {
    await writeFileAtomic(path, rendered);
  } catch (err) {
    if (current !== undefined) announce(current);
    throw err;
  }
  return rendered;
}
