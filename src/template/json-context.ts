/**
 * Where a substituted value lands in a JSON-shaped template: inside a
 * string literal (`"{{x}}"`) or as a bare value (`{"n": {{x}}}`).
 */
export type JsonHole = 'string' | 'value';

/**
 * Decides whether literal text with holes between its pieces is a JSON
 * document, and where each hole sits. `literals` has one more entry than
 * there are holes. The text counts as JSON when it starts with `{` or `[`
 * and parses once every hole is filled with a neutral value (`x` inside a
 * string, `0` elsewhere); otherwise this answers undefined and the template
 * stays plain text.
 */
export function jsonHoles(literals: readonly string[]): JsonHole[] | undefined {
  if (literals.length < 2) return undefined;
  const first = (literals[0] ?? '').trimStart();
  if (!first.startsWith('{') && !first.startsWith('[')) return undefined;
  const holes: JsonHole[] = [];
  let inString = false;
  let escaped = false;
  let probe = '';
  literals.forEach((literal, i) => {
    for (let k = 0; k < literal.length; k++) {
      const c = literal.charCodeAt(k);
      if (!inString) {
        if (c === 0x22) inString = true;
      } else if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) inString = false;
    }
    probe += literal;
    if (i === literals.length - 1) return;
    // A hole right after a backslash would complete an escape; a letter keeps the probe honest.
    if (inString) escaped = false;
    holes.push(inString ? 'string' : 'value');
    probe += inString ? 'x' : '0';
  });
  try {
    JSON.parse(probe);
  } catch {
    return undefined;
  }
  return holes;
}

/** The value as the content of a JSON string literal: quotes, backslashes and controls escaped. */
export function jsonStringContent(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

const JSON_SCALAR = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)$/;

/**
 * The value in a bare JSON value position: kept as is when it is exactly one
 * JSON value (a number, `true`, an object from `{{request.body}}`), otherwise
 * quoted as a JSON string, so it can never add keys or elements around it.
 * Empty stays empty (an absent value renders empty, docs/templates.md#resolution-rules).
 */
export function jsonValue(value: string): string {
  if (value === '' || JSON_SCALAR.test(value)) return value;
  try {
    JSON.parse(value);
    return value;
  } catch {
    return JSON.stringify(value);
  }
}

/** The encoder for a hole. */
export const jsonEncoder = (hole: JsonHole): ((value: string) => string) =>
  hole === 'string' ? jsonStringContent : jsonValue;
