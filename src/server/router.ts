import type { HeaderMap } from '../engine/context.js';
import type { ConfigIssue } from '../config/schema-validate.js';

/** Route match criteria after `${ENV}` resolution (COMPAT §3.1). */
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
  /** First declared route whose criteria all hold, or undefined. `host` may carry a port. */
  match(method: string, host: string | undefined, path: string, headers: HeaderMap): RouteEntry<T> | undefined;
  readonly size: number;
}

/** Checks match criteria; `base` is the route's config path, e.g. `routes[3].match`. */
export function validateRouteMatch(match: ResolvedMatch, base: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (match.path !== undefined && !match.path.startsWith('/')) {
    issues.push({ path: `${base}.path`, message: `must start with '/' (got '${match.path}')` });
  }
  return issues;
}

/** Compiles the route table once per configuration. */
export function compileRouter<T>(routes: readonly RouteEntry<T>[]): Router<T> {
  const hostOk = (patterns: string[], host: string | undefined) => {
    if (patterns.length === 0) return true;
    if (host === undefined) return false;
    let h = host.toLowerCase();
    const colon = h.lastIndexOf(':');
    if (colon !== -1 && !h.endsWith(']')) h = h.slice(0, colon);
    return patterns.some((p) => {
      const pl = p.toLowerCase();
      if (pl.startsWith('*.')) {
        const suffix = pl.slice(1);
        return h.endsWith(suffix) && !h.slice(0, -suffix.length).includes('.') && h.length > suffix.length;
      }
      return pl === h;
    });
  };
  const pathOk = (pattern: string | undefined, path: string) => {
    if (pattern === undefined) return true;
    if (pattern.endsWith('/*')) {
      const prefix = pattern.slice(0, -2);
      return path === prefix || path.startsWith(prefix + '/');
    }
    if (!pattern.includes('*')) return pattern === path;
    const ps = pattern.split('/');
    const xs = path.split('/');
    return ps.length === xs.length && ps.every((seg, i) => seg === '*' || seg === xs[i]);
  };
  return {
    size: routes.length,
    match(method, host, path, headers) {
      for (const r of routes) {
        const m = r.match;
        if (!pathOk(m.path, path)) continue;
        if (m.methods && m.methods.length > 0 && !m.methods.some((x) => x.toUpperCase() === method)) continue;
        if (!hostOk([...(m.host ? [m.host] : []), ...(m.hosts ?? [])], host)) continue;
        if (m.headers && !Object.entries(m.headers).every(([k, v]) => headers[k.toLowerCase()] === v)) continue;
        return r;
      }
      return undefined;
    },
  };
}
