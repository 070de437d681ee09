/**
 * A small XML reader for body-transformer input: elements become object keys,
 * repeated siblings become arrays, attributes go under `_attr`, and an
 * element's text is a plain string (or `_text` when it also has attributes or
 * children). No DTDs, no external entities: nothing is fetched or expanded.
 */

export type XmlValue = string | XmlObject | XmlValue[];
export interface XmlObject {
  [key: string]: XmlValue | Record<string, string>;
}

export class XmlSyntaxError extends Error {
  constructor(message: string, at: number) {
    super(`${message} at offset ${at}`);
    this.name = 'XmlSyntaxError';
  }
}

const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;
const ATTR = /\s+([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("([^"]*)"|'([^']*)')/y;
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9A-Fa-f]+|#\d+|[A-Za-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return Object.hasOwn(ENTITIES, ref) ? ENTITIES[ref]! : whole;
  });
}

interface Element {
  name: string;
  attrs: Record<string, string> | null;
  children: XmlObject;
  text: string;
  hasChildren: boolean;
}

function finish(el: Element): XmlValue {
  const text = el.text.trim();
  if (el.attrs === null && !el.hasChildren) return text;
  const out: XmlObject = el.children;
  if (el.attrs !== null) out._attr = el.attrs;
  if (text !== '') out._text = text;
  return out;
}

/**
 * Element and attribute names come from the document: `constructor` must not
 * find Object.prototype's and `__proto__` must not re-prototype the object, so
 * keys are looked up as own properties and defined, never assigned.
 */
function setOwn<T>(target: Record<string, T>, name: string, value: T): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}

function addChild(parent: XmlObject, name: string, value: XmlValue): void {
  const existing = Object.hasOwn(parent, name) ? parent[name] : undefined;
  if (existing === undefined) setOwn(parent, name, value);
  else if (Array.isArray(existing)) existing.push(value);
  else setOwn(parent, name, [existing, value]);
}

/** Parses a document into `{rootName: value}`; throws XmlSyntaxError on malformed input. */
export function parseXml(source: string): XmlObject {
  const root: XmlObject = {};
  const stack: Element[] = [];
  let pos = 0;
  const len = source.length;
  while (pos < len) {
    const lt = source.indexOf('<', pos);
    const textEnd = lt === -1 ? len : lt;
    if (textEnd > pos) {
      const text = source.slice(pos, textEnd);
      const top = stack[stack.length - 1];
      if (top !== undefined) top.text += decodeEntities(text);
      else if (text.trim() !== '') throw new XmlSyntaxError('text outside the root element', pos);
    }
    if (lt === -1) break;
    pos = lt;
    if (source.startsWith('<?', pos)) {
      pos = skipPast(source, '?>', pos);
    } else if (source.startsWith('<!--', pos)) {
      pos = skipPast(source, '-->', pos);
    } else if (source.startsWith('<![CDATA[', pos)) {
      const end = source.indexOf(']]>', pos);
      if (end === -1) throw new XmlSyntaxError('unclosed CDATA section', pos);
      const top = stack[stack.length - 1];
      if (top === undefined) throw new XmlSyntaxError('CDATA outside the root element', pos);
      top.text += source.slice(pos + 9, end);
      pos = end + 3;
    } else if (source.startsWith('<!', pos)) {
      throw new XmlSyntaxError('DOCTYPE declarations are not accepted', pos);
    } else if (source.startsWith('</', pos)) {
      const name = readName(source, pos + 2);
      const el = stack.pop();
      if (el === undefined || el.name !== name)
        throw new XmlSyntaxError(`unexpected closing tag </${name}>`, pos);
      pos = skipPast(source, '>', pos + 2 + name.length);
      attach(stack, root, el, pos);
    } else {
      const name = readName(source, pos + 1);
      let at = pos + 1 + name.length;
      let attrs: Record<string, string> | null = null;
      for (;;) {
        ATTR.lastIndex = at;
        const m = ATTR.exec(source);
        if (m === null) break;
        setOwn((attrs ??= {}), m[1]!, decodeEntities(m[3] ?? m[4] ?? ''));
        at = ATTR.lastIndex;
      }
      while (at < len && /\s/.test(source[at]!)) at++;
      const el: Element = { name, attrs, children: {}, text: '', hasChildren: false };
      if (source.startsWith('/>', at)) {
        pos = at + 2;
        attach(stack, root, el, pos);
      } else if (source[at] === '>') {
        pos = at + 1;
        stack.push(el);
      } else {
        throw new XmlSyntaxError(`malformed start tag <${name}>`, at);
      }
    }
  }
  if (stack.length > 0) throw new XmlSyntaxError(`unclosed element <${stack[stack.length - 1]!.name}>`, len);
  if (Object.keys(root).length === 0) throw new XmlSyntaxError('no root element', 0);
  return root;
}

function attach(stack: Element[], root: XmlObject, el: Element, pos: number): void {
  const parent = stack[stack.length - 1];
  if (parent !== undefined) {
    parent.hasChildren = true;
    addChild(parent.children, el.name, finish(el));
  } else {
    if (Object.keys(root).length > 0) throw new XmlSyntaxError('more than one root element', pos);
    setOwn(root, el.name, finish(el));
  }
}

function readName(source: string, at: number): string {
  NAME.lastIndex = at;
  const m = NAME.exec(source);
  if (m === null) throw new XmlSyntaxError('expected an element name', at);
  return m[0];
}

function skipPast(source: string, token: string, from: number): number {
  const end = source.indexOf(token, from);
  if (end === -1) throw new XmlSyntaxError(`missing '${token}'`, from);
  return end + token.length;
}
