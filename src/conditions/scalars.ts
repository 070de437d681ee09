/** A config value an operator compares against, prepared once at compile time. */
export interface Expected {
  readonly value: string | number | boolean;
  /** The value as text: what a flat variable is compared with. */
  readonly text: string;
  /** Set when the value is a number or numeric text: comparisons then go numeric. */
  readonly number: number | undefined;
}

const NUMERIC = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/** Decimal number text only: '' and ' 1' are not numbers (unlike `Number`). */
export function parseNumber(text: string): number | undefined {
  if (!NUMERIC.test(text)) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

export function isScalar(value: unknown): value is string | number | boolean {
  return (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

export function expected(value: string | number | boolean): Expected {
  const text = String(value);
  const number =
    typeof value === 'number' ? value : typeof value === 'string' ? parseNumber(value) : undefined;
  return { value, text, number };
}

/** Flat variable text against a config value: numeric when both sides are numbers, else exact text. */
export function textEquals(text: string, want: Expected): boolean {
  if (want.number !== undefined) {
    const n = parseNumber(text);
    if (n !== undefined) return n === want.number;
  }
  return text === want.text;
}

/**
 * A JSON node against a config value. Strings and numbers follow `textEquals`
 * (so `"30"` equals `30`); booleans equal only booleans; null, objects and
 * arrays equal nothing.
 */
export function nodeEquals(node: unknown, want: Expected): boolean {
  switch (typeof node) {
    case 'string':
      return typeof want.value !== 'boolean' && textEquals(node, want);
    case 'number':
      return want.number !== undefined && node === want.number;
    case 'boolean':
      return node === want.value;
    default:
      return false;
  }
}

/** The number a JSON node stands for: numbers, and strings holding decimal numbers. */
export function nodeNumber(node: unknown): number | undefined {
  if (typeof node === 'number') return node;
  if (typeof node === 'string') return parseNumber(node);
  return undefined;
}
