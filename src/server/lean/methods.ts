import { HTTPParser, METHODS } from '../../runtime/native-http-parser.js';

/**
 * llhttp's method names (its `HTTP_ALL_METHOD_MAP`, the table node:http reads
 * as `allMethods`). Only candidates: the table below keeps those the parser
 * itself accepts in HTTP mode, at the index it reports for them.
 */
const LLHTTP_NAMES = [
  'DELETE',
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'COPY',
  'LOCK',
  'MKCOL',
  'MOVE',
  'PROPFIND',
  'PROPPATCH',
  'SEARCH',
  'UNLOCK',
  'BIND',
  'REBIND',
  'UNBIND',
  'ACL',
  'REPORT',
  'MKACTIVITY',
  'CHECKOUT',
  'MERGE',
  'M-SEARCH',
  'NOTIFY',
  'SUBSCRIBE',
  'UNSUBSCRIBE',
  'PATCH',
  'PURGE',
  'MKCALENDAR',
  'LINK',
  'UNLINK',
  'SOURCE',
  'PRI',
  'DESCRIBE',
  'ANNOUNCE',
  'SETUP',
  'PLAY',
  'PAUSE',
  'TEARDOWN',
  'GET_PARAMETER',
  'SET_PARAMETER',
  'REDIRECT',
  'RECORD',
  'FLUSH',
  'QUERY',
];

/** The index the request parser reports for `name`, or undefined when it refuses the method. */
function parserIndexOf(name: string): number | undefined {
  const parser = new HTTPParser();
  parser.initialize(HTTPParser.REQUEST, {}, 0, HTTPParser.kLenientNone);
  let index: number | undefined;
  parser[HTTPParser.kOnHeadersComplete] = (_major: number, _minor: number, _h: unknown, method: number) => {
    index = method;
    return 1;
  };
  const parsed = parser.execute(Buffer.from(`${name} /m HTTP/1.1\r\nHost: m\r\n\r\n`, 'latin1'));
  parser.close();
  return typeof parsed === 'number' ? index : undefined;
}

/**
 * Method names by the index the parser reports in `kOnHeadersComplete`, asked
 * of the parser itself once at start-up. node's public `methods` list is in
 * another order past index 33 (it held `QUERY` at 34, llhttp reports 46), so
 * reading it by index turned `QUERY` into `GET` (review F-9). An index missing
 * here is a method the lean front refuses rather than renames.
 */
export const METHOD_BY_INDEX: readonly (string | undefined)[] = (() => {
  const table: (string | undefined)[] = [];
  for (const name of new Set([...LLHTTP_NAMES, ...METHODS])) {
    const index = parserIndexOf(name);
    if (index !== undefined && table[index] === undefined) table[index] = name;
  }
  return table;
})();
