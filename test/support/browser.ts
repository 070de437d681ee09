import { request, type SimpleResponse } from './http.js';

interface StoredCookie {
  value: string;
  path: string;
  /** ms since epoch; undefined for a session cookie. */
  expires: number | undefined;
}

/**
 * Just enough of a browser for login flows: a cookie jar honouring Path and
 * Max-Age (per host name, ports ignored as browsers do), and redirects that
 * are followed one hop at a time so tests can look at each.
 */
export class Browser {
  readonly #jar = new Map<string, Map<string, StoredCookie>>();

  async get(url: string, headers: Record<string, string> = {}): Promise<SimpleResponse> {
    return this.send(url, { headers });
  }

  async postForm(url: string, form: Record<string, string>): Promise<SimpleResponse> {
    return this.send(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
  }

  async send(
    url: string,
    options: { method?: string; headers?: Record<string, string>; body?: string } = {},
  ): Promise<SimpleResponse> {
    const cookie = this.cookieHeader(url);
    const res = await request(url, {
      ...options,
      headers: { ...options.headers, ...(cookie === '' ? {} : { cookie }) },
    });
    this.#store(url, res.headers['set-cookie'] ?? []);
    return res;
  }

  /** Follows `Location` from `res` (relative to `from`) until a non-redirect; returns every response. */
  async follow(from: string, res: SimpleResponse, maxHops = 10): Promise<SimpleResponse[]> {
    const seen = [res];
    let url = from;
    let current = res;
    while (current.status >= 300 && current.status < 400 && seen.length <= maxHops) {
      url = new URL(String(current.headers.location), url).toString();
      current = await this.get(url);
      seen.push(current);
    }
    return seen;
  }

  cookie(host: string, name: string, path = '/'): string | undefined {
    return this.#jar.get(host)?.get(`${path}\0${name}`)?.value;
  }

  setCookie(host: string, name: string, value: string, path = '/'): void {
    this.#cookies(host).set(`${path}\0${name}`, { value, path, expires: undefined });
  }

  cookieHeader(url: string): string {
    const { hostname, pathname } = new URL(url);
    const now = Date.now();
    const out: string[] = [];
    for (const [key, c] of this.#jar.get(hostname) ?? []) {
      if (c.expires !== undefined && c.expires <= now) continue;
      const inPath = pathname === c.path || pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`);
      if (inPath) out.push(`${key.split('\0')[1]}=${c.value}`);
    }
    return out.join('; ');
  }

  #cookies(host: string): Map<string, StoredCookie> {
    let cookies = this.#jar.get(host);
    if (cookies === undefined) {
      cookies = new Map<string, StoredCookie>();
      this.#jar.set(host, cookies);
    }
    return cookies;
  }

  #store(url: string, headers: string[]): void {
    const { hostname } = new URL(url);
    for (const header of headers) {
      const [pair = '', ...attrs] = header.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = '/';
      let expires: number | undefined;
      for (const attr of attrs) {
        const [k = '', v = ''] = attr.split('=');
        if (k.toLowerCase() === 'path') path = v;
        if (k.toLowerCase() === 'max-age') expires = Date.now() + Number(v) * 1000;
      }
      const key = `${path}\0${name}`;
      if (expires !== undefined && expires <= Date.now()) this.#cookies(hostname).delete(key);
      else this.#cookies(hostname).set(key, { value, path, expires });
    }
  }
}
