import type { Context } from '../core/context.js';
import { ConfigError } from '../core/plugin.js';
import { compileRegex, type ConfigRegex } from './regex.js';
import { compileIpList } from './ip-match.js';
import {
  expected,
  isScalar,
  nodeEquals,
  nodeNumber,
  parseNumber,
  textEquals,
  type Expected,
} from './scalars.js';
import type { FlatSubject } from './subjects.js';

/** One compiled operator, applied to either kind of subject. */
export interface Operator {
  flat(subject: FlatSubject, ctx: Context): boolean;
  /** Every node a JSONPath matched; most operators hold when any node passes. */
  json(nodes: readonly unknown[]): boolean;
}

export const UNARY_OPERATORS: ReadonlySet<string> = new Set(['present', 'absent', 'is_null']);

export const BINARY_OPERATORS: ReadonlySet<string> = new Set([
  '==',
  '~=',
  '!=',
  '>',
  '>=',
  '<',
  '<=',
  '~~',
  '~*',
  'in',
  'has',
  'ipmatch',
  'contains',
]);

export const OPERATOR_NAMES: readonly string[] = [...BINARY_OPERATORS, ...UNARY_OPERATORS];

export function compileUnary(op: string): Operator {
  switch (op) {
    case 'present':
      return { flat: (s, ctx) => s.present(ctx), json: (nodes) => nodes.length > 0 };
    case 'absent':
      return { flat: (s, ctx) => !s.present(ctx), json: (nodes) => nodes.length === 0 };
    default:
      // is_null: the compiler rejects it on flat subjects, which cannot be null.
      return { flat: () => false, json: (nodes) => nodes.includes(null) };
  }
}

/** Validates `value` for `op` and prepares it (numbers, regexes, CIDRs); `key` is the value's config path. */
export function compileBinary(op: string, value: unknown, key: string): Operator {
  switch (op) {
    case '==': {
      const want = scalar(value, key);
      return perValue(
        (text) => textEquals(text, want),
        (node) => nodeEquals(node, want),
      );
    }
    case '~=':
    case '!=': {
      const want = scalar(value, key);
      return perValue(
        (text) => !textEquals(text, want),
        (node) => !nodeEquals(node, want),
      );
    }
    case '>':
    case '>=':
    case '<':
    case '<=': {
      const compare = ordering(op, numeric(value, key));
      return perValue(
        (text) => {
          const n = parseNumber(text);
          return n !== undefined && compare(n);
        },
        (node) => {
          const n = nodeNumber(node);
          return n !== undefined && compare(n);
        },
      );
    }
    case '~~':
    case '~*': {
      const re = regex(value, op === '~*', key);
      return perValue(
        (text) => re.test(text),
        (node) => typeof node === 'string' && re.test(node),
      );
    }
    case 'in': {
      const list = scalarList(value, key).map(expected);
      return perValue(
        (text) => list.some((want) => textEquals(text, want)),
        (node) => list.some((want) => nodeEquals(node, want)),
      );
    }
    case 'has': {
      const want = scalar(value, key);
      const hasIn = (items: unknown): boolean =>
        Array.isArray(items) && items.some((item) => nodeEquals(item, want));
      return {
        flat: (s, ctx) => {
          const raw = s.raw?.(ctx);
          if (Array.isArray(raw)) return hasIn(raw);
          // A flat value is a comma-separated list (`X-Tags: beta, internal`).
          return s
            .read(ctx)
            .split(',')
            .some((part) => textEquals(part.trim(), want));
        },
        json: (nodes) => nodes.some(hasIn),
      };
    }
    case 'contains': {
      const want = scalar(value, key);
      return {
        flat: (s, ctx) => s.present(ctx) && s.read(ctx).includes(want.text),
        json: (nodes) =>
          nodes.some((node) =>
            typeof node === 'string'
              ? node.includes(want.text)
              : Array.isArray(node) && node.some((item) => nodeEquals(item, want)),
          ),
      };
    }
    case 'ipmatch': {
      const matches = ipMatcher(value, key);
      return perValue(matches, (node) => typeof node === 'string' && matches(node));
    }
    default:
      throw new ConfigError(key, `unknown operator \`${op}\``);
  }
}

function perValue(text: (value: string) => boolean, node: (value: unknown) => boolean): Operator {
  return { flat: (s, ctx) => text(s.read(ctx)), json: (nodes) => nodes.some(node) };
}

function ordering(op: '>' | '>=' | '<' | '<=', bound: number): (n: number) => boolean {
  switch (op) {
    case '>':
      return (n) => n > bound;
    case '>=':
      return (n) => n >= bound;
    case '<':
      return (n) => n < bound;
    case '<=':
      return (n) => n <= bound;
  }
}

function scalar(value: unknown, key: string): Expected {
  if (!isScalar(value)) throw new ConfigError(key, 'must be a string, number or boolean');
  return expected(value);
}

function numeric(value: unknown, key: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? parseNumber(value) : undefined;
  if (n === undefined || !Number.isFinite(n)) throw new ConfigError(key, 'must be a number');
  return n;
}

function scalarList(value: unknown, key: string): (string | number | boolean)[] {
  if (!Array.isArray(value)) throw new ConfigError(key, 'must be an array');
  return value.map((item: unknown, i) => {
    if (!isScalar(item)) throw new ConfigError(`${key}[${i}]`, 'must be a string, number or boolean');
    return item;
  });
}

function regex(value: unknown, ignoreCase: boolean, key: string): ConfigRegex {
  if (typeof value !== 'string') throw new ConfigError(key, 'must be a regular expression string');
  return compileRegex(value, key, ignoreCase ? 'i' : '');
}

function ipMatcher(value: unknown, key: string): (address: string) => boolean {
  if (!Array.isArray(value)) throw new ConfigError(key, 'must be an array of IP addresses or CIDRs');
  const entries = value.map((item: unknown, i) => {
    if (typeof item !== 'string') throw new ConfigError(`${key}[${i}]`, 'must be an IP address or CIDR');
    return item;
  });
  const matcher = compileIpList(entries, key);
  return (address) => matcher.matches(address);
}
