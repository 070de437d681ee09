import { parse as parseYaml } from 'yaml';
import { invalidInput } from '../errors.js';
import type { ToolArgs } from './types.js';

export const str = (args: ToolArgs, key: string): string | undefined => {
  const v = args[key];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
};

export const requiredStr = (args: ToolArgs, key: string): string => {
  const v = str(args, key);
  if (v === undefined) throw invalidInput(`'${key}' is required and must be a non-empty string`);
  return v;
};

export const flag = (args: ToolArgs, key: string): boolean => args[key] === true;

const PAYLOAD_HINT =
  'Pass the definition as a JSON object or a YAML document string, e.g. {"name": "orders", "definition": {"match": {"path": "/orders/*"}, "policy": "orders-policy"}, "dry_run": true}. A policy definition is {"nodes": [{"id", "type", "config"?}], "edges": [{"from": "node.port", "to": "node.in"}]}.';

/**
 * A resource definition from the first of `keys` present: a JSON object, or
 * a YAML string (what the docs show and agents tend to write).
 */
export function definition(args: ToolArgs, keys: readonly string[]): Record<string, unknown> {
  const key = keys.find((k) => args[k] !== undefined && args[k] !== null);
  if (key === undefined) throw invalidInput(`'${keys[0]}' is required`, PAYLOAD_HINT);
  let value = args[key];
  if (typeof value === 'string') {
    try {
      value = parseYaml(value) as unknown;
    } catch (err) {
      throw invalidInput(`'${key}' is not valid YAML: ${(err as Error).message}`, PAYLOAD_HINT);
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalidInput(`'${key}' must be an object (or a YAML mapping)`, PAYLOAD_HINT);
  return structuredClone(value as Record<string, unknown>);
}
