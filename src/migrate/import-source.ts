/**
 * What both importers share about their input: the result shape, the error for an input that
 * cannot be imported at all (exit 2), and lenient readers of a parsed YAML/JSON document, where
 * `null` (what a decK dump writes for every unset key) counts as absent.
 */

export class ImportInputError extends Error {
  override name = 'ImportInputError';
}

export interface ImportResult {
  /** The gateway.yaml content. */
  gateway: Record<string, unknown>;
  /** Files written beside the output (certificates), relative to its folder. */
  files: { path: string; content: string; where: string }[];
}

export type Obj = Record<string, unknown>;

export function isObj(value: unknown): value is Obj {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A mapping, or `{}` when absent; anything else is not importable. */
export function obj(value: unknown, where: string): Obj {
  if (value === undefined || value === null) return {};
  if (!isObj(value)) throw new ImportInputError(`${where} must be a mapping`);
  return value;
}

/** A list, or `[]` when absent; anything else is not importable. */
export function list(value: unknown, where: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new ImportInputError(`${where} must be a list`);
  return value;
}

/** A list of mappings. */
export function objects(value: unknown, where: string): Obj[] {
  return list(value, where).map((item, i) => {
    if (!isObj(item)) throw new ImportInputError(`${where}[${i}] must be a mapping`);
    return item;
  });
}

export function str(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

export function num(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  return undefined;
}

export function bool(value: unknown): boolean | undefined {
  return typeof value === 'boolean' ? value : undefined;
}

export function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value)) return [];
  return value.map(str).filter((s): s is string => s !== undefined);
}

/** The keys of `config` that are set (not null, not an empty list or map) and not in `known`. */
export function extraKeys(config: Obj, known: readonly string[]): string[] {
  return Object.entries(config)
    .filter(([k, v]) => !known.includes(k) && isSet(v))
    .map(([k]) => k);
}

export function isSet(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isObj(value)) return Object.values(value).some(isSet);
  return true;
}

/** `host:port` with a default port; IPv6 in brackets. */
export function splitHostPort(text: string, defaultPort: number): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) return { host: v6[1] ?? '', port: v6[2] === undefined ? defaultPort : Number(v6[2]) };
  const at = text.lastIndexOf(':');
  if (at > 0 && /^\d+$/.test(text.slice(at + 1)) && text.indexOf(':') === at)
    return { host: text.slice(0, at), port: Number(text.slice(at + 1)) };
  return { host: text, port: defaultPort };
}

/** A regular expression source matching `text` literally. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `$http_<name>` spelling of a header for legacy `$var` fields. */
export function headerVar(name: string): string {
  return `$http_${name.toLowerCase().replace(/-/g, '_')}`;
}
