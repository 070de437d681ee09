import { compileVariable } from './catalog.js';
import type { Part, Phase } from './readers.js';

const OPEN_BRACE = 0x7b;

/** A name starts with a letter or underscore: `$5` and `$-` stay literal. */
function isNameStart(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;
}

function isNameChar(code: number): boolean {
  return isNameStart(code) || (code >= 0x30 && code <= 0x39);
}

/**
 * Compiles the legacy `$name` / `${name}` variables of one literal stretch of
 * source text. Only source text comes here, never rendered output, so a value
 * holding `$host` is never read as a variable.
 */
export function compileLegacy(text: string, phase: Phase): Part[] {
  const parts: Part[] = [];
  let literalStart = 0;
  let i = text.indexOf('$');
  while (i !== -1) {
    const next = text.charCodeAt(i + 1);
    let name: string | undefined;
    let end = i + 1;
    if (next === OPEN_BRACE) {
      const close = text.indexOf('}', i + 2);
      if (close !== -1 && close > i + 2 && isNameStart(text.charCodeAt(i + 2))) {
        name = text.slice(i + 2, close);
        end = close + 1;
      }
    } else if (isNameStart(next)) {
      end = i + 2;
      while (end < text.length && isNameChar(text.charCodeAt(end))) end++;
      name = text.slice(i + 1, end);
    }
    if (name !== undefined) {
      if (i > literalStart) parts.push(text.slice(literalStart, i));
      parts.push(compileVariable(name, phase));
      literalStart = end;
    }
    i = text.indexOf('$', end);
  }
  if (literalStart < text.length) parts.push(text.slice(literalStart));
  return parts;
}
