import {
  cookie,
  formField,
  messageValue,
  queryParam,
  readClientIp,
  readClientPort,
  readConsumerGroup,
  readConsumerName,
  readHost,
  readMethod,
  readPath,
  readProtocol,
  readQueryString,
  readRequestBody,
  readRequestUri,
  readResponseBody,
  readScheme,
  requestHeader,
  responseHeader,
  responseStatus,
  type Part,
  type Phase,
} from './readers.js';

/** One entry of `GET /api/vars` (docs/templates.md#admin-api). */
export interface VarInfo {
  name: string;
  kind: 'static' | 'family';
  description: string;
  /** A legacy `$`-form. */
  example: string;
  /** The template equivalent, '' when none exists. */
  path: string;
  family_source?: string;
}

interface EntryText {
  description: string;
  example: string;
  path: string;
}

interface StaticEntry extends EntryText {
  kind: 'static';
  name: string;
  compile: (phase: Phase) => Part;
}

interface FamilyEntry extends EntryText {
  kind: 'family';
  /** The name before `*`: `arg_` for `$arg_<name>`. */
  prefix: string;
  source: string;
  compile: (suffix: string, phase: Phase) => Part;
}

type CatalogEntry = StaticEntry | FamilyEntry;

const fixed = (reader: Part) => (): Part => reader;

/** `$http_x_api_key` names the header `x-api-key`. */
const headerName = (suffix: string): string => suffix.replaceAll('_', '-').toLowerCase();

/**
 * The variable catalog: the only list of legacy variables. The `$` resolver and
 * `GET /api/vars` both read it, so what is documented is what resolves.
 */
const CATALOG: readonly CatalogEntry[] = [
  {
    kind: 'static',
    name: 'uri',
    description: 'Request path without the query string.',
    example: '$uri',
    path: 'request.path',
    compile: fixed(readPath),
  },
  {
    kind: 'static',
    name: 'request_uri',
    description: 'Request path plus `?query` when query parameters exist.',
    example: '$request_uri',
    path: '',
    compile: fixed(readRequestUri),
  },
  {
    kind: 'static',
    name: 'method',
    description: 'HTTP method.',
    example: '$method',
    path: 'request.method',
    compile: fixed(readMethod),
  },
  {
    kind: 'static',
    name: 'request_method',
    description: 'HTTP method (alias of `$method`).',
    example: '$request_method',
    path: 'request.method',
    compile: fixed(readMethod),
  },
  {
    kind: 'static',
    name: 'host',
    description: 'Host the client addressed.',
    example: '$host',
    path: 'request.host',
    compile: fixed(readHost),
  },
  {
    kind: 'static',
    name: 'scheme',
    description: '`http` or `https`.',
    example: '$scheme',
    path: 'request.scheme',
    compile: fixed(readScheme),
  },
  {
    kind: 'static',
    name: 'protocol',
    description: 'Protocol version (`http1`, `http2`, ...).',
    example: '$protocol',
    path: '',
    compile: fixed(readProtocol),
  },
  {
    kind: 'static',
    name: 'remote_addr',
    description: 'Client IP address without the port.',
    example: '$remote_addr',
    path: 'client.ip',
    compile: fixed(readClientIp),
  },
  {
    kind: 'static',
    name: 'remote_port',
    description: 'Client port.',
    example: '$remote_port',
    path: 'client.port',
    compile: fixed(readClientPort),
  },
  {
    kind: 'static',
    name: 'query_string',
    description: 'Full query string, rebuilt with parameters sorted by name.',
    example: '$query_string',
    path: '',
    compile: fixed(readQueryString),
  },
  {
    kind: 'static',
    name: 'status',
    description: 'Response status code; `0` before a response exists and in request-phase fields.',
    example: '$status',
    path: 'response.status',
    compile: responseStatus,
  },
  {
    kind: 'static',
    name: 'resp_body',
    description: 'Response body, lossy UTF-8.',
    example: '$resp_body',
    path: 'response.body',
    compile: fixed(readResponseBody),
  },
  {
    kind: 'static',
    name: 'request_body',
    description: 'Request body, lossy UTF-8.',
    example: '$request_body',
    path: 'request.body',
    compile: fixed(readRequestBody),
  },
  {
    kind: 'static',
    name: 'consumer_name',
    description: 'Name of the consumer an auth plugin authenticated.',
    example: '$consumer_name',
    path: 'message.consumer.name',
    compile: fixed(readConsumerName),
  },
  {
    kind: 'static',
    name: 'consumer_group_id',
    description: 'Group of the consumer an auth plugin authenticated.',
    example: '$consumer_group_id',
    path: 'message.consumer.group',
    compile: fixed(readConsumerGroup),
  },
  {
    kind: 'family',
    prefix: 'arg_',
    source: 'request_query',
    description: 'First value of the query parameter `<name>`.',
    example: '$arg_page',
    path: 'request.query.<name>',
    compile: (suffix) => queryParam(suffix),
  },
  {
    kind: 'family',
    prefix: 'http_',
    source: 'request_headers',
    description: 'First value of a request header; underscores map to dashes, case-insensitive.',
    example: '$http_x_api_key',
    path: 'request.headers.<name>',
    compile: (suffix) => requestHeader(headerName(suffix)),
  },
  {
    kind: 'family',
    prefix: 'cookie_',
    source: 'request_cookies',
    description: 'Value of the cookie `<name>` from the Cookie header.',
    example: '$cookie_session',
    path: 'request.cookies.<name>',
    compile: (suffix) => cookie(suffix),
  },
  {
    kind: 'family',
    prefix: 'post_arg_',
    source: 'request_form',
    description: 'First value of a form field; only for form-urlencoded request bodies.',
    example: '$post_arg_user',
    path: '',
    compile: (suffix) => formField(suffix),
  },
  {
    kind: 'family',
    prefix: 'msg_',
    source: 'message',
    description: '`context.message` key, stringified; dotted keys need `${msg_key.with.dots}`.',
    example: '${msg_consumer.name}',
    path: 'message.<key>',
    compile: (suffix) => messageValue(suffix),
  },
  {
    kind: 'family',
    prefix: 'sent_http_',
    source: 'response_headers',
    description: 'First value of a response header; same name mapping as `$http_*`.',
    example: '$sent_http_content_type',
    path: 'response.headers.<name>',
    compile: (suffix) => responseHeader(headerName(suffix)),
  },
];

const STATIC = new Map<string, StaticEntry>();
const FAMILIES: FamilyEntry[] = [];
for (const entry of CATALOG) {
  if (entry.kind === 'static') STATIC.set(entry.name, entry);
  else FAMILIES.push(entry);
}
// Longest prefix first, so a future `x_` family can never shadow an `xy_` one.
FAMILIES.sort((a, b) => b.prefix.length - a.prefix.length);

/**
 * Compiles the legacy variable `name` (without `$` or braces) for one field.
 * Unknown names and a family prefix without a suffix compile to ''.
 */
export function compileVariable(name: string, phase: Phase): Part {
  const entry = STATIC.get(name);
  if (entry !== undefined) return entry.compile(phase);
  for (const family of FAMILIES) {
    if (name.length > family.prefix.length && name.startsWith(family.prefix)) {
      return family.compile(name.slice(family.prefix.length), phase);
    }
  }
  return '';
}

const VARS: readonly VarInfo[] = CATALOG.map((entry): VarInfo => {
  const text = { description: entry.description, example: entry.example, path: entry.path };
  return entry.kind === 'static'
    ? { name: entry.name, kind: 'static', ...text }
    : { name: `${entry.prefix}*`, kind: 'family', ...text, family_source: entry.source };
});

/** The `GET /api/vars` payload. */
export function listVars(): { vars: VarInfo[] } {
  return { vars: VARS.map((v) => ({ ...v })) };
}
