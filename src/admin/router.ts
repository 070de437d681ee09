import type { IncomingMessage } from 'node:http';
import type { Reply } from './http.js';

export type AdminMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface AdminRequest {
  req: IncomingMessage;
  /** Decoded `:name` segments of the route path. */
  params: Record<string, string>;
  query: URLSearchParams;
}

export interface AdminRoute {
  method: AdminMethod;
  /** `/api/routes/:name`: literal segments and `:param` segments. */
  path: string;
  /** `false` only for the probes; everything else needs HTTP Basic. */
  auth: boolean;
  /** A POST that writes nothing (a preview): a viewer may call it too. */
  readOnly?: boolean;
  handler(request: AdminRequest): Reply | Promise<Reply>;
}

interface CompiledRoute {
  route: AdminRoute;
  segments: { literal?: string; param?: string }[];
}

export type RouteMatch =
  | { kind: 'found'; route: AdminRoute; params: Record<string, string> }
  | { kind: 'method'; allowed: AdminMethod[]; auth: boolean }
  | { kind: 'none' };

/** A small table router: first declared route whose method and segments match wins. */
export class AdminRouter {
  readonly #routes: CompiledRoute[];

  constructor(readonly routes: readonly AdminRoute[]) {
    this.#routes = routes.map((route) => ({
      route,
      segments: split(route.path).map((s) => (s.startsWith(':') ? { param: s.slice(1) } : { literal: s })),
    }));
  }

  match(method: string, pathname: string): RouteMatch {
    const parts = split(pathname);
    const allowed: AdminMethod[] = [];
    let auth = false;
    for (const { route, segments } of this.#routes) {
      if (segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      const ok = segments.every((segment, i) => {
        const part = parts[i] as string;
        if (segment.literal !== undefined) return segment.literal === part;
        const value = safeDecode(part);
        if (value === undefined || value === '') return false;
        params[segment.param as string] = value;
        return true;
      });
      if (!ok) continue;
      if (route.method === method) return { kind: 'found', route, params };
      allowed.push(route.method);
      auth ||= route.auth;
    }
    return allowed.length > 0 ? { kind: 'method', allowed, auth } : { kind: 'none' };
  }
}

function split(path: string): string[] {
  return path.split('/').filter((s, i) => i > 0 || s !== '');
}

function safeDecode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}
