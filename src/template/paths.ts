import {
  cookie,
  isHeaderName,
  messageValue,
  queryParam,
  readClientIp,
  readClientPort,
  readHost,
  readMethod,
  readPath,
  readRequestBody,
  readResponseBody,
  readScheme,
  requestHeader,
  responseHeader,
  responseStatus,
  type Part,
  type Phase,
} from './readers.js';

/**
 * How a `{{…}}` path resolved: a compiled part, a foreign path left alone
 * silently (docs/templates.md#resolution-rules), or a bad leaf of a known namespace (rule 4).
 */
export type Resolution =
  { kind: 'part'; part: Part } | { kind: 'foreign' } | { kind: 'invalid'; reason: string };

/** A leaf that is the end of the path (`request.method`). */
type ScalarLeaf = (phase: Phase) => Part;
/** A leaf followed by a name (`request.headers.<name>`); `undefined` rejects the name. */
type NamedLeaf = (name: string) => Part | undefined;

interface Namespace {
  scalars: ReadonlyMap<string, ScalarLeaf>;
  named: ReadonlyMap<string, NamedLeaf>;
}

const header =
  (read: (lowercase: string) => Part) =>
  (name: string): Part | undefined =>
    isHeaderName(name) ? read(name.toLowerCase()) : undefined;

const spaceless =
  (read: (name: string) => Part) =>
  (name: string): Part | undefined =>
    /\s/.test(name) ? undefined : read(name);

const NAMESPACES = new Map<string, Namespace>([
  [
    'request',
    {
      scalars: new Map<string, ScalarLeaf>([
        ['method', () => readMethod],
        ['path', () => readPath],
        ['host', () => readHost],
        ['scheme', () => readScheme],
        ['body', () => readRequestBody],
      ]),
      named: new Map<string, NamedLeaf>([
        ['headers', header(requestHeader)],
        ['query', queryParam],
        ['cookies', spaceless(cookie)],
      ]),
    },
  ],
  [
    'response',
    {
      scalars: new Map<string, ScalarLeaf>([
        ['status', responseStatus],
        ['body', () => readResponseBody],
      ]),
      named: new Map<string, NamedLeaf>([['headers', header(responseHeader)]]),
    },
  ],
  [
    'client',
    {
      scalars: new Map<string, ScalarLeaf>([
        ['ip', () => readClientIp],
        ['port', () => readClientPort],
      ]),
      named: new Map(),
    },
  ],
]);

/** Resolves a trimmed path such as `request.headers.x-api-key`. Never throws. */
export function resolvePath(path: string, phase: Phase, env: NodeJS.ProcessEnv): Resolution {
  const dot = path.indexOf('.');
  const head = dot === -1 ? path : path.slice(0, dot);
  const rest = dot === -1 ? undefined : path.slice(dot + 1);

  // The whole rest is the key: message keys and (in principle) env names may hold dots.
  if (head === 'message') {
    return rest === undefined || rest === ''
      ? invalid('`message` needs a key, as in {{message.tenant}}')
      : part(messageValue(rest));
  }
  if (head === 'env') {
    if (rest === undefined || rest === '') return invalid('`env` needs a variable name, as in {{env.HOME}}');
    const value = env[rest];
    return value === undefined ? invalid(`environment variable ${rest} is not set`) : part(value);
  }

  const ns = NAMESPACES.get(head);
  if (ns === undefined) return { kind: 'foreign' };
  if (rest === undefined) return invalid(`\`${head}\` needs a field, one of ${leafList(ns)}`);

  const scalar = ns.scalars.get(rest);
  if (scalar !== undefined) return part(scalar(phase));

  const dot2 = rest.indexOf('.');
  const leaf = dot2 === -1 ? rest : rest.slice(0, dot2);
  const named = ns.named.get(leaf);
  if (named !== undefined) {
    const name = dot2 === -1 ? '' : rest.slice(dot2 + 1);
    if (name === '') return invalid(`\`${head}.${leaf}\` needs a name, as in {{${head}.${leaf}.<name>}}`);
    const compiled = named(name);
    return compiled === undefined ? invalid(`"${name}" is not a valid ${leaf} name`) : part(compiled);
  }
  if (ns.scalars.has(leaf)) return invalid(`\`${head}.${leaf}\` takes no further path`);
  return invalid(`unknown field "${leaf}" of \`${head}\`, expected one of ${leafList(ns)}`);
}

function part(compiled: Part): Resolution {
  return { kind: 'part', part: compiled };
}

function invalid(reason: string): Resolution {
  return { kind: 'invalid', reason };
}

function leafList(ns: Namespace): string {
  return [...ns.scalars.keys(), ...[...ns.named.keys()].map((k) => `${k}.<name>`)].join(', ');
}
