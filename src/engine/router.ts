import type { HeaderMap } from '../core/context.js';
import type { ConfigIssue } from '../config/schema-validate.js';
import { ConfigRejected, joinPath } from '../config/schema-validate.js';

/** Route match criteria after `${ENV}` resolution (docs/routing.md#matching). */
export interface ResolvedMatch {
  path?: string;
  methods?: string[];
  headers?: Record<string, string>;
  host?: string;
  hosts?: string[];
}

export interface RouteEntry<T> {
  name: string;
  match: ResolvedMatch;
  target: T;
}

export interface Router<T> {
  /** First route added (match order) whose criteria all hold, or undefined. `host` may carry a port. */
  match(
    method: string,
    host: string | undefined,
    path: string,
    headers: HeaderMap,
  ): RouteEntry<T> | undefined;
  readonly size: number;
}

const METHOD_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Checks match criteria; `base` is the route's config path, e.g. `routes[3].match`. */
export function validateRouteMatch(match: ResolvedMatch, base: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (match.path !== undefined) {
    const problem = pathProblem(match.path);
    if (problem !== undefined) issues.push({ path: joinPath(base, 'path'), message: problem });
  }
  match.methods?.forEach((method, i) => {
    if (!METHOD_TOKEN.test(method)) {
      issues.push({
        path: joinPath(joinPath(base, 'methods'), i),
        message: `'${method}' is not a method token`,
      });
    }
  });
  if (match.host !== undefined) {
    const problem = hostProblem(match.host);
    if (problem !== undefined) issues.push({ path: joinPath(base, 'host'), message: problem });
  }
  match.hosts?.forEach((host, i) => {
    const problem = hostProblem(host);
    if (problem !== undefined) issues.push({ path: joinPath(joinPath(base, 'hosts'), i), message: problem });
  });
  return issues;
}

function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `must start with '/' (got '${path}')`;
  for (const segment of path.slice(1).split('/')) {
    if (segment === '*' || !segment.includes('*')) continue;
    if (segment.includes('**'))
      return `'**' is not supported; a trailing '/*' already matches any depth (got '${path}')`;
    return `'*' must be a whole segment, as in '/users/*/orders' or '/api/*' (got '${path}')`;
  }
  return undefined;
}

function hostProblem(host: string): string | undefined {
  if (host === '') return 'is empty (is the environment variable set?)';
  const name = normalizeHost(host);
  if (name === '') return `has no host name (got '${host}')`;
  if (!name.includes('*')) return undefined;
  const rest = name.slice(2);
  if (name.startsWith('*.') && rest !== '' && !rest.startsWith('.') && !rest.includes('*')) return undefined;
  return `a wildcard must be a single leading '*.' label, as in '*.example.com' (got '${host}')`;
}

/**
 * Lowercases a host and drops its port: `Example.COM:8080` → `example.com`,
 * `[::1]:8080` → `::1`. Patterns go through it too, so `[::1]` and `::1` are
 * the same pattern and a port written in a pattern is ignored like the request's.
 */
function normalizeHost(host: string): string {
  let name = host;
  if (name.charCodeAt(0) === 0x5b /* [ */) {
    const close = name.indexOf(']');
    name = close === -1 ? name.slice(1) : name.slice(1, close);
  } else {
    const colon = name.indexOf(':');
    // More than one colon without brackets is a bare IPv6 address, not host:port.
    if (colon !== -1 && colon === name.lastIndexOf(':')) name = name.slice(0, colon);
  }
  return name.toLowerCase();
}

/** ASCII-uppercases a request method without allocating when it is already uppercase. */
function upperMethod(method: string): string {
  let lower = false;
  for (let i = 0; i < method.length; i++) {
    const c = method.charCodeAt(i);
    if (c > 0x7f) return method; // not a token: matches no (validated) route method anyway
    if (c >= 0x61 && c <= 0x7a) lower = true;
  }
  return lower ? method.toUpperCase() : method;
}

interface HeaderRule {
  name: string;
  value: string;
}

/** A route with its criteria normalized once at compile time. */
interface CompiledRoute<T> {
  index: number;
  entry: RouteEntry<T>;
  methods: string[];
  exactHosts: string[];
  /** `*.example.com` is kept as `example.com`: the request host minus its first label. */
  wildcardHosts: string[];
  headers: HeaderRule[];
}

/**
 * Routes sharing one path pattern, split by method so that a lookup never
 * walks routes that its method already rules out. Lists stay in declaration order.
 */
class MethodIndex<T> {
  any: CompiledRoute<T>[] | undefined;
  byMethod: Map<string, CompiledRoute<T>[]> | undefined;

  add(route: CompiledRoute<T>): void {
    if (route.methods.length === 0) {
      (this.any ??= []).push(route);
      return;
    }
    this.byMethod ??= new Map();
    for (const method of route.methods) {
      const list = this.byMethod.get(method);
      if (list === undefined) this.byMethod.set(method, [route]);
      else list.push(route);
    }
  }
}

/** Routes sharing one path pattern, split by host (exact or wildcard suffix) and then by method. */
class Bucket<T> {
  min = Number.POSITIVE_INFINITY;
  anyHost: MethodIndex<T> | undefined;
  byHost: Map<string, MethodIndex<T>> | undefined;
  byWildcard: Map<string, MethodIndex<T>> | undefined;

  add(route: CompiledRoute<T>): void {
    this.min = Math.min(this.min, route.index);
    if (route.exactHosts.length === 0 && route.wildcardHosts.length === 0) {
      (this.anyHost ??= new MethodIndex()).add(route);
      return;
    }
    for (const host of route.exactHosts) {
      indexFor((this.byHost ??= new Map<string, MethodIndex<T>>()), host).add(route);
    }
    for (const suffix of route.wildcardHosts) {
      indexFor((this.byWildcard ??= new Map<string, MethodIndex<T>>()), suffix).add(route);
    }
  }
}

function indexFor<T>(map: Map<string, MethodIndex<T>>, key: string): MethodIndex<T> {
  let index = map.get(key);
  if (index === undefined) {
    index = new MethodIndex();
    map.set(key, index);
  }
  return index;
}

/** One path segment of the pattern trie; `min` is the smallest route index below it, for pruning. */
class PathNode<T> {
  min = Number.POSITIVE_INFINITY;
  children: Map<string, PathNode<T>> | undefined;
  wildcard: PathNode<T> | undefined;
  /** Patterns that end exactly here. */
  exact: Bucket<T> | undefined;
  /** Patterns `<here>/*`: any path at least this deep. */
  prefix: Bucket<T> | undefined;

  child(segment: string): PathNode<T> {
    if (segment === '*') return (this.wildcard ??= new PathNode());
    this.children ??= new Map();
    let node = this.children.get(segment);
    if (node === undefined) {
      node = new PathNode();
      this.children.set(segment, node);
    }
    return node;
  }
}

interface HostKey {
  name: string | undefined;
  /** The name minus its first label, looked up among wildcard patterns; undefined without a dot. */
  suffix: string | undefined;
}

const NO_HOST: HostKey = { name: undefined, suffix: undefined };
const NO_HEADERS: HeaderMap = {};
/** Distinct raw Host values remembered before the cache starts over; bounds memory under junk hosts. */
const HOST_CACHE_LIMIT = 1024;

class TrieRouter<T> implements Router<T> {
  size = 0;
  readonly #routes: CompiledRoute<T>[] = [];
  readonly #root = new PathNode<T>();
  readonly #anyPath = new Bucket<T>();
  #hostIndexed = false;
  readonly #hostCache = new Map<string, HostKey>();
  // Per-lookup inputs, set at the top of match() and cleared at the end. Lookup is synchronous, so
  // sharing them is safe and spares the recursive walk from threading five extra arguments.
  #method = '';
  #host: string | undefined;
  #hostSuffix: string | undefined;
  #headers: HeaderMap = NO_HEADERS;
  #path = '';

  /** Appends the next declared route (routes are added in declaration order). */
  add(entry: RouteEntry<T>): void {
    const route = compileRoute(entry, this.#routes.length);
    this.#routes.push(route);
    this.size = this.#routes.length;
    if (route.exactHosts.length > 0 || route.wildcardHosts.length > 0) this.#hostIndexed = true;
    this.#insert(route);
  }

  #insert(route: CompiledRoute<T>): void {
    const pattern = route.entry.match.path;
    if (pattern === undefined) {
      this.#anyPath.add(route);
      return;
    }
    const segments = pattern.split('/'); // segments[0] is the '' before the leading '/'
    const isPrefix = segments[segments.length - 1] === '*';
    const end = isPrefix ? segments.length - 1 : segments.length;
    let node = this.#root;
    node.min = Math.min(node.min, route.index);
    for (let i = 1; i < end; i++) {
      node = node.child(segments[i] ?? '');
      node.min = Math.min(node.min, route.index);
    }
    if (isPrefix) (node.prefix ??= new Bucket()).add(route);
    else (node.exact ??= new Bucket()).add(route);
  }

  match(
    method: string,
    host: string | undefined,
    path: string,
    headers: HeaderMap,
  ): RouteEntry<T> | undefined {
    const key = this.#hostIndexed && host !== undefined ? this.#hostKey(host) : NO_HOST;
    this.#method = upperMethod(method);
    this.#host = key.name;
    this.#hostSuffix = key.suffix;
    this.#headers = headers;
    this.#path = path;
    let best = this.#bucket(this.#anyPath, this.#routes.length);
    // A path without a leading '/' (`*`, absolute-form) has no segments: only `/*` can match it.
    if (this.#root.min < best)
      best = this.#visit(this.#root, path.charCodeAt(0) === 0x2f ? 1 : path.length + 1, best);
    this.#headers = NO_HEADERS; // do not keep the request alive through the router
    this.#path = '';
    return this.#routes[best]?.entry;
  }

  /** Normalizing costs a few allocations; most traffic repeats a handful of Host values. */
  #hostKey(host: string): HostKey {
    let key = this.#hostCache.get(host);
    if (key === undefined) {
      const name = normalizeHost(host);
      const dot = name.indexOf('.');
      key = { name, suffix: dot > 0 ? name.slice(dot + 1) : undefined };
      if (this.#hostCache.size >= HOST_CACHE_LIMIT) this.#hostCache.clear();
      this.#hostCache.set(host, key);
    }
    return key;
  }

  /**
   * Walks the segment that starts at `start` (just past a '/'); `start > path.length` means the
   * path has no segments left. Slices only the segments it must look up, never the whole path.
   */
  #visit(node: PathNode<T>, start: number, best: number): number {
    if (node.min >= best) return best;
    if (node.prefix !== undefined) best = this.#bucket(node.prefix, best);
    const path = this.#path;
    if (start > path.length) return node.exact === undefined ? best : this.#bucket(node.exact, best);
    let end = path.indexOf('/', start);
    if (end === -1) end = path.length;
    const child = node.children?.get(path.slice(start, end));
    if (child !== undefined) best = this.#visit(child, end + 1, best);
    if (node.wildcard !== undefined) best = this.#visit(node.wildcard, end + 1, best);
    return best;
  }

  #bucket(bucket: Bucket<T>, best: number): number {
    if (bucket.min >= best) return best;
    if (bucket.anyHost !== undefined) best = this.#methods(bucket.anyHost, best);
    if (this.#host !== undefined) {
      const exact = bucket.byHost?.get(this.#host);
      if (exact !== undefined) best = this.#methods(exact, best);
      if (this.#hostSuffix !== undefined) {
        const wildcard = bucket.byWildcard?.get(this.#hostSuffix);
        if (wildcard !== undefined) best = this.#methods(wildcard, best);
      }
    }
    return best;
  }

  #methods(index: MethodIndex<T>, best: number): number {
    if (index.any !== undefined) best = this.#scan(index.any, best);
    const forMethod = index.byMethod?.get(this.#method);
    if (forMethod !== undefined) best = this.#scan(forMethod, best);
    return best;
  }

  /** Path, host and method already hold for every route in `list`; only headers remain. */
  #scan(list: readonly CompiledRoute<T>[], best: number): number {
    for (const route of list) {
      if (route.index >= best) break;
      if (headersHold(route.headers, this.#headers)) return route.index;
    }
    return best;
  }
}

function headersHold(rules: readonly HeaderRule[], headers: HeaderMap): boolean {
  for (const rule of rules) {
    const value = headers[rule.name];
    if ((typeof value === 'string' ? value : value?.[0]) !== rule.value) return false;
  }
  return true;
}

/** Shared by every route without methods, hosts or headers (never mutated). */
const NONE: never[] = [];

/** `*.example.com` goes to the wildcard list as `example.com`, any other host to the exact list. */
function addHostPattern(hosts: { exact: string[]; wildcard: string[] }, pattern: string): void {
  const name = normalizeHost(pattern);
  const wildcard = name.startsWith('*.');
  const key = wildcard ? name.slice(2) : name;
  let list = wildcard ? hosts.wildcard : hosts.exact;
  if (list.includes(key)) return;
  if (list === NONE) {
    list = [];
    if (wildcard) hosts.wildcard = list;
    else hosts.exact = list;
  }
  list.push(key);
}

function compileRoute<T>(entry: RouteEntry<T>, index: number): CompiledRoute<T> {
  const m = entry.match;
  // Lists of a few entries: deduplicated in first-seen order without allocating sets.
  const hosts = { exact: NONE as string[], wildcard: NONE as string[] };
  if (m.host !== undefined) addHostPattern(hosts, m.host);
  if (m.hosts !== undefined) for (const pattern of m.hosts) addHostPattern(hosts, pattern);
  let methods: string[] = NONE;
  if (m.methods !== undefined && m.methods.length > 0) {
    methods = [];
    for (const method of m.methods) {
      const upper = method.toUpperCase();
      if (!methods.includes(upper)) methods.push(upper);
    }
  }
  return {
    index,
    entry,
    methods,
    exactHosts: hosts.exact,
    wildcardHosts: hosts.wildcard,
    headers:
      m.headers === undefined
        ? NONE
        : Object.entries(m.headers).map(([name, value]) => ({ name: name.toLowerCase(), value })),
  };
}

/**
 * Compiles the route table once per configuration (docs/routing.md#matching). Path
 * patterns go into a segment trie whose leaves are indexed by host and
 * method, so a lookup touches only routes whose path, host and method can
 * hold, and the first declared one whose headers also hold wins. Cost grows
 * with path depth, not table size; the one linear case left is many routes
 * that share path, host and method and differ only in headers.
 *
 * Cases docs/routing.md#matching does not spell out, decided here: a `*` segment also
 * matches an empty segment (`/users//orders`); a request path without a
 * leading `/` (`*`, absolute-form) is matched only by path-less routes and
 * `/*`; paths compare as given (no decoding, case-sensitive); a port written
 * in a host pattern is ignored like the request's, and `[::1]` equals `::1`.
 * The data plane hands it paths already normalised (`request-path.ts`: no
 * dot-segments, no `//`, unreserved escapes decoded), so the first two cases
 * only arise for callers that skip that step.
 *
 * Throws `ConfigRejected` when a route fails `validateRouteMatch`.
 *
 * @example
 * const router = compileRouter([{ name: 'api', match: { path: '/api/*', methods: ['get'] }, target: 'p' }]);
 * router.match('GET', 'example.com:8080', '/api/users', {})?.name; // 'api'
 */
export function compileRouter<T>(routes: readonly RouteEntry<T>[]): Router<T> {
  const issues = routes.flatMap((r, i) => validateRouteMatch(r.match, `routes[${i}].match`));
  if (issues.length > 0) throw new ConfigRejected(issues);
  const builder = routerBuilder<T>();
  for (const route of routes) builder.add(route);
  return builder.finish();
}

/**
 * `compileRouter` one route at a time, for a caller that has run `validateRouteMatch` on each
 * route itself and wants to pause between batches (the compiler, so a reload of thousands of
 * routes does not stall requests). `finish` returns the router; add nothing after it.
 */
export function routerBuilder<T>(): { add(entry: RouteEntry<T>): void; finish(): Router<T> } {
  const router = new TrieRouter<T>();
  return { add: (entry) => router.add(entry), finish: () => router };
}
