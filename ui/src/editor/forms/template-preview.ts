/**
 * What a templated field renders for one sample request, in the browser: the
 * same namespaces and passthrough rules as docs/templates.md, over the
 * sample below. A preview, not the gateway's renderer: filters and
 * per-request data beyond the sample show as the gateway would on that sample.
 */
export const SAMPLE = {
  request: {
    method: 'GET',
    path: '/orders/42',
    host: 'api.example.com',
    scheme: 'https',
    body: '',
    headers: { 'user-agent': 'curl/8.5.0', 'x-tenant-id': 'acme', accept: '*/*' } as Record<string, string>,
    query: { page: '2', sort: 'asc' } as Record<string, string>,
    cookies: { session: 'abc' } as Record<string, string>,
  },
  response: {
    status: '200',
    body: '{"ok":true}',
    headers: { 'content-type': 'application/json' } as Record<string, string>,
  },
  message: { 'consumer.name': 'ada', 'consumer.group': 'admins' } as Record<string, string>,
  client: { ip: '203.0.113.7', port: '51234' },
} as const;

/** The preview length (about 80 characters, one line). */
export const PREVIEW_LENGTH = 80;

function resolve(path: string): string | undefined {
  const [ns, ...rest] = path.split('.');
  const leaf = rest.join('.');
  const r = SAMPLE.request;
  switch (ns) {
    case 'request': {
      const [field, ...name] = rest;
      const key = name.join('.').toLowerCase();
      if (field === 'headers') return r.headers[key] ?? '';
      if (field === 'query') return r.query[name.join('.')] ?? '';
      if (field === 'cookies') return r.cookies[name.join('.')] ?? '';
      if (name.length === 0 && field !== undefined && field in r) {
        const v = r[field as keyof typeof r];
        return typeof v === 'string' ? v : undefined;
      }
      return undefined;
    }
    case 'response': {
      if (rest[0] === 'headers') return SAMPLE.response.headers[rest.slice(1).join('.').toLowerCase()] ?? '';
      if (leaf === 'status' || leaf === 'body') return SAMPLE.response[leaf];
      return undefined;
    }
    case 'message':
      return SAMPLE.message[leaf] ?? '';
    case 'client':
      return leaf === 'ip' || leaf === 'port' ? SAMPLE.client[leaf] : undefined;
    case 'env':
      return `<env ${leaf}>`;
    default:
      return undefined;
  }
}

const LEGACY: Record<string, string> = {
  uri: SAMPLE.request.path,
  request_uri: `${SAMPLE.request.path}?page=2&sort=asc`,
  method: 'GET',
  request_method: 'GET',
  host: SAMPLE.request.host,
  scheme: 'https',
  protocol: 'http1',
  remote_addr: SAMPLE.client.ip,
  remote_port: SAMPLE.client.port,
  query_string: 'page=2&sort=asc',
  status: '200',
  consumer_name: 'ada',
  consumer_group_id: 'admins',
};

function legacy(name: string): string | undefined {
  if (name in LEGACY) return LEGACY[name];
  if (name.startsWith('http_')) return SAMPLE.request.headers[name.slice(5).replace(/_/g, '-')] ?? '';
  if (name.startsWith('arg_')) return SAMPLE.request.query[name.slice(4)] ?? '';
  if (name.startsWith('cookie_')) return SAMPLE.request.cookies[name.slice(7)] ?? '';
  return undefined;
}

/** The rendered text, one line, cut at PREVIEW_LENGTH characters. */
export function previewTemplate(text: string): string {
  const rendered = text
    .replace(/\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}/g, (whole, path: string) => resolve(path) ?? whole)
    .replace(/\$([a-z_][a-z0-9_]*)/g, (whole, name: string) => legacy(name) ?? whole);
  const line = rendered.replace(/\s*\n\s*/g, ' ⏎ ');
  return line.length > PREVIEW_LENGTH ? `${line.slice(0, PREVIEW_LENGTH - 1)}…` : line;
}

/** Whether a field path (`response_headers.x-a`) is listed as templated (`response_headers.*`). */
export function isTemplated(templated: readonly string[], path: string): boolean {
  return templated.some((pattern) =>
    pattern.endsWith('.*')
      ? path.startsWith(pattern.slice(0, -1)) || path === pattern.slice(0, -2)
      : pattern === path,
  );
}

export const looksTemplated = (text: string): boolean => /\{\{|\$[a-z_]/.test(text);
