import { parseXml, XmlSyntaxError, type XmlObject, type XmlValue } from '../core/body-transformer/xml.js';

/** What a CAS `serviceValidate` reply says. */
export type CasVerdict = { user: string } | { refused: string };

/**
 * Reads a CAS 2.0 XML reply (`cas:` prefix optional) or a CAS 3.0 JSON reply
 * (`serviceResponse.authenticationSuccess.user`). Anything else, including a
 * success without a user, is a refusal: docs/plugins/cas-auth.md treats an unparseable reply as a
 * denial, not a provider failure.
 */
export function readCasReply(body: string): CasVerdict {
  const text = body.trim();
  if (text.startsWith('{')) return fromJson(text);
  if (text.startsWith('<')) return fromXml(text);
  return { refused: 'unparseable validation reply' };
}

function fromJson(text: string): CasVerdict {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { refused: 'unparseable validation reply (invalid JSON)' };
  }
  const response = field(doc, 'serviceResponse');
  const user = field(field(response, 'authenticationSuccess'), 'user');
  if (typeof user === 'string' && user !== '') return { user };
  const failure = field(response, 'authenticationFailure');
  if (failure !== undefined)
    return { refused: describe(field(failure, 'code'), field(failure, 'description')) };
  return { refused: 'unrecognised validation reply' };
}

function fromXml(text: string): CasVerdict {
  let doc: XmlObject;
  try {
    doc = parseXml(text.replace(/^<\?xml[^>]*\?>/, ''));
  } catch (err) {
    if (err instanceof XmlSyntaxError) return { refused: 'unparseable validation reply (invalid XML)' };
    throw err;
  }
  const response = child(doc, 'serviceResponse');
  const success = child(response, 'authenticationSuccess');
  if (success !== undefined) {
    const user = textOf(child(success, 'user'));
    return user === '' ? { refused: 'authenticationSuccess without a user' } : { user };
  }
  const failure = child(response, 'authenticationFailure');
  if (failure !== undefined) {
    const attrs = typeof failure === 'object' && !Array.isArray(failure) ? failure['_attr'] : undefined;
    const code =
      attrs !== undefined && !Array.isArray(attrs) ? (attrs as Record<string, string>)['code'] : undefined;
    return { refused: describe(code, textOf(failure)) };
  }
  return { refused: 'unrecognised validation reply' };
}

function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
}

/** The child element `local`, whatever namespace prefix it carries. */
function child(value: XmlValue | Record<string, string> | undefined, local: string): XmlValue | undefined {
  if (value === undefined || typeof value === 'string' || Array.isArray(value)) return undefined;
  for (const [name, v] of Object.entries(value)) {
    if (name === local || name.endsWith(`:${local}`)) return Array.isArray(v) ? v[0] : v;
  }
  return undefined;
}

function textOf(value: XmlValue | undefined): string {
  if (typeof value === 'string') return value.trim();
  if (value !== undefined && !Array.isArray(value) && typeof value['_text'] === 'string')
    return value['_text'].trim();
  return '';
}

function describe(code: unknown, description: unknown): string {
  const c = typeof code === 'string' && code !== '' ? code : 'AUTHENTICATION_FAILURE';
  const d = typeof description === 'string' ? description.trim() : '';
  return d === '' ? c : `${c}: ${d}`;
}
