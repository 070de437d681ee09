/**
 * A small JSONPath subset, parsed once at compile time: root `$`, `.name`,
 * `.*`, `['name']` / `["name"]`, `[n]` (negative counts from the end), `[*]`
 * and recursive descent `..name`, `..*`, `..[…]`. Filters, slices and unions
 * are rejected rather than half-supported.
 */

type Selector =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'wildcard' };

interface Segment {
  readonly descendant: boolean;
  readonly selector: Selector;
}

/** A compiled path; `query` returns every matched node in document order. */
export interface JsonPath {
  readonly source: string;
  query(document: unknown): unknown[];
}

/** Thrown by `parseJsonPath`; `offset` is the character index of the problem. */
export class JsonPathSyntaxError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(`${message} at offset ${offset}`);
    this.name = 'JsonPathSyntaxError';
  }
}

export function parseJsonPath(source: string): JsonPath {
  const segments = new Parser(source).parse();
  return {
    source,
    query: (document) => {
      let nodes: unknown[] = [document];
      for (const segment of segments) {
        const next: unknown[] = [];
        for (const node of nodes) {
          if (segment.descendant) visitDescendants(node, (n) => select(n, segment.selector, next));
          else select(node, segment.selector, next);
        }
        if (next.length === 0) return next;
        nodes = next;
      }
      return nodes;
    },
  };
}

function select(node: unknown, selector: Selector, out: unknown[]): void {
  if (typeof node !== 'object' || node === null) return;
  switch (selector.kind) {
    case 'name':
      if (!Array.isArray(node) && Object.hasOwn(node, selector.name)) {
        out.push((node as Record<string, unknown>)[selector.name]);
      }
      return;
    case 'index': {
      if (!Array.isArray(node)) return;
      const i = selector.index < 0 ? node.length + selector.index : selector.index;
      if (i >= 0 && i < node.length) out.push(node[i]);
      return;
    }
    case 'wildcard':
      // A loop, not push(...spread): a huge array would overflow the argument stack.
      for (const child of children(node)) out.push(child);
  }
}

function children(node: object): unknown[] {
  return Array.isArray(node) ? (node as unknown[]) : Object.values(node as Record<string, unknown>);
}

/**
 * The node itself, then its descendants depth-first. An explicit stack, not
 * recursion: a request body nested thousands deep must not overflow the call stack.
 */
function visitDescendants(root: unknown, visit: (node: unknown) => void): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    visit(node);
    if (typeof node !== 'object' || node === null) continue;
    const kids = children(node);
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
}

const ESCAPES: Record<string, string> = {
  '"': '"',
  "'": "'",
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

class Parser {
  #pos = 0;
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  parse(): Segment[] {
    if (this.#text[0] !== '$') this.#fail('a JSONPath starts with `$`');
    this.#pos = 1;
    const segments: Segment[] = [];
    while (this.#pos < this.#text.length) {
      const c = this.#text[this.#pos];
      if (c === '.') {
        const descendant = this.#text[this.#pos + 1] === '.';
        this.#pos += descendant ? 2 : 1;
        if (descendant && this.#text[this.#pos] === '[') {
          segments.push({ descendant, selector: this.#bracket() });
        } else if (this.#text[this.#pos] === '*') {
          this.#pos++;
          segments.push({ descendant, selector: { kind: 'wildcard' } });
        } else {
          segments.push({ descendant, selector: { kind: 'name', name: this.#shorthandName() } });
        }
      } else if (c === '[') {
        segments.push({ descendant: false, selector: this.#bracket() });
      } else {
        this.#fail(`unexpected \`${c}\`; expected \`.\` or \`[\``);
      }
    }
    return segments;
  }

  #shorthandName(): string {
    const start = this.#pos;
    while (
      this.#pos < this.#text.length &&
      isNameChar(this.#text.charCodeAt(this.#pos), this.#pos === start)
    ) {
      this.#pos++;
    }
    if (this.#pos === start) {
      this.#fail("expected a member name (use ['…'] for names with other characters)");
    }
    return this.#text.slice(start, this.#pos);
  }

  #bracket(): Selector {
    this.#pos++; // `[`
    this.#skipBlank();
    const c = this.#text[this.#pos];
    let selector: Selector;
    if (c === '*') {
      this.#pos++;
      selector = { kind: 'wildcard' };
    } else if (c === "'" || c === '"') {
      selector = { kind: 'name', name: this.#quoted(c) };
    } else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      selector = { kind: 'index', index: this.#integer() };
    } else if (c === '?') {
      this.#fail('filter selectors are not supported');
    } else {
      this.#fail('expected `*`, a quoted name or an index');
    }
    this.#skipBlank();
    const close = this.#text[this.#pos];
    if (close === ',') this.#fail('union selectors are not supported');
    if (close === ':') this.#fail('slice selectors are not supported');
    if (close !== ']') this.#fail('expected `]`');
    this.#pos++;
    return selector;
  }

  #quoted(quote: string): string {
    this.#pos++;
    let out = '';
    for (;;) {
      const c = this.#text[this.#pos];
      if (c === undefined) this.#fail('unterminated string');
      if (c === quote) {
        this.#pos++;
        return out;
      }
      if (c === '\\') {
        const e = this.#text[this.#pos + 1] ?? '';
        if (e === 'u') {
          const hex = this.#text.slice(this.#pos + 2, this.#pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.#fail('bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          this.#pos += 6;
          continue;
        }
        const decoded = ESCAPES[e];
        if (decoded === undefined) this.#fail(`bad escape \`\\${e}\``);
        out += decoded;
        this.#pos += 2;
        continue;
      }
      out += c;
      this.#pos++;
    }
  }

  #integer(): number {
    const match = /^-?(0|[1-9][0-9]*)/.exec(this.#text.slice(this.#pos));
    if (match === null) this.#fail('bad index');
    const value = Number(match[0]);
    if (!Number.isSafeInteger(value) || match[0] === '-0') this.#fail('bad index');
    this.#pos += match[0].length;
    return value;
  }

  #skipBlank(): void {
    while (/^[ \t\n\r]$/.test(this.#text[this.#pos] ?? '')) this.#pos++;
  }

  #fail(message: string): never {
    throw new JsonPathSyntaxError(this.#pos, message);
  }
}

/** RFC 9535 member-name-shorthand: ALPHA, `_` or non-ASCII first, then also DIGIT. */
function isNameChar(code: number, first: boolean): boolean {
  if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f || code >= 0x80) {
    return true;
  }
  return !first && code >= 0x30 && code <= 0x39;
}
