import type { Context } from '../core/context.js';
import type { JsonSubject } from './subjects.js';

const UNREAD: unique symbol = Symbol('unread');
const NOT_JSON: unique symbol = Symbol('not-json');

type Document = unknown;

/** One `evaluate` call: the context plus each body parsed at most once, on first use. */
export class Evaluation {
  #request: Document = UNREAD;
  #response: Document = UNREAD;

  constructor(readonly ctx: Context) {}

  /** The nodes `subject` matches; none when the body is missing, empty or not JSON. */
  nodes(subject: JsonSubject): unknown[] {
    let document: Document;
    if (subject.target === 'request') {
      if (this.#request === UNREAD) this.#request = parse(this.ctx.request.body);
      document = this.#request;
    } else {
      if (this.#response === UNREAD) this.#response = parse(this.ctx.response.body);
      document = this.#response;
    }
    return document === NOT_JSON ? [] : subject.path.query(document);
  }
}

function parse(body: Buffer | null): Document {
  if (body === null || body.length === 0) return NOT_JSON;
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}
