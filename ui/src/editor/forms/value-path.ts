export type Key = string | number;

/** The value at `path` below `root`. */
export function getAt(root: unknown, path: readonly Key[]): unknown {
  let v = root;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<Key, unknown>)[k] : undefined;
  return v;
}

/** A copy of `root` with `value` at `path`; `undefined` removes an object key (an array item stays, as null). */
export function setAt(root: unknown, path: readonly Key[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [Key, ...Key[]];
  if (typeof head === 'number') {
    const list = Array.isArray(root) ? [...(root as unknown[])] : [];
    list[head] = setAt(list[head], rest, value);
    return list;
  }
  const obj: Record<string, unknown> =
    root !== null && typeof root === 'object' && !Array.isArray(root)
      ? { ...(root as Record<string, unknown>) }
      : {};
  const next = setAt(obj[head], rest, value);
  if (next === undefined) delete obj[head];
  else obj[head] = next;
  return obj;
}

/** `config.targets.0.port` for the path [targets, 0, port]. */
export const pathText = (path: readonly Key[]): string => ['config', ...path.map(String)].join('.');
