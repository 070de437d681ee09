import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

/** How `/serviceValidate` answers: CAS 2.0 XML with or without the `cas:` prefix, or CAS 3.0 JSON. */
export type CasFormat = 'xml' | 'xml-unprefixed' | 'json';

/** Failure modes for provider-error tests. */
export type CasFault = 'none' | 'status-500' | 'hang' | 'garbage';

export interface CasServer {
  /** `http://127.0.0.1:<port>/cas`: what `idp_uri` points at. */
  readonly url: string;
  format: CasFormat;
  fault: CasFault;
  /** Every `/serviceValidate` call: ticket and service as received. */
  readonly validations: { ticket: string; service: string }[];
  /** Issues a service ticket as a successful login would (single use, bound to `service`). */
  issueTicket(user: string, service: string): string;
  close(): Promise<void>;
}

interface Ticket {
  user: string;
  service: string;
}

const XML_NS = 'http://www.yale.edu/tp/cas';

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * A CAS server speaking the real protocol (CAS 2.0/3.0): `GET /cas/login`
 * shows a login form, or with a valid single-sign-on cookie (`CASTGC`)
 * redirects straight back; `POST /cas/login` checks the credentials, sets the
 * SSO cookie and redirects to `service?ticket=ST-…`; `/cas/serviceValidate`
 * (and `/cas/p3/serviceValidate`) validates a ticket exactly once and only for
 * the service it was issued for.
 */
export async function startCasServer(
  options: {
    users?: Record<string, string>;
    /** PEM file paths: serve https with this certificate. */
    tls?: { cert: string; key: string };
  } = {},
): Promise<CasServer> {
  const users = options.users ?? { alice: 'alice-pw', bob: 'bob-pw' };
  const tickets = new Map<string, Ticket>();
  const sso = new Map<string, string>();
  const validations: { ticket: string; service: string }[] = [];
  const sockets = new Set<Socket>();

  const issue = (user: string, service: string): string => {
    const ticket = `ST-${randomBytes(12).toString('hex')}`;
    tickets.set(ticket, { user, service });
    return ticket;
  };

  const redirectWithTicket = (
    res: ServerResponse,
    service: string,
    user: string,
    extra: Record<string, string> = {},
  ) => {
    const target = new URL(service);
    target.searchParams.set('ticket', issue(user, service));
    res.writeHead(302, { location: target.toString(), ...extra }).end();
  };

  const state: CasServer = {
    url: '',
    format: 'xml',
    fault: 'none',
    validations,
    issueTicket: issue,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const validate = (url: URL, res: ServerResponse): void => {
    const ticket = url.searchParams.get('ticket') ?? '';
    const service = url.searchParams.get('service') ?? '';
    validations.push({ ticket, service });
    if (state.fault === 'hang') return;
    if (state.fault === 'status-500') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
      return;
    }
    if (state.fault === 'garbage') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>maintenance</body></html>');
      return;
    }
    const found = tickets.get(ticket);
    tickets.delete(ticket);
    let failure: { code: string; description: string } | undefined;
    if (ticket === '' || service === '')
      failure = { code: 'INVALID_REQUEST', description: 'ticket and service are required' };
    else if (found === undefined)
      failure = { code: 'INVALID_TICKET', description: `Ticket ${ticket} not recognized` };
    else if (found.service !== service)
      failure = { code: 'INVALID_SERVICE', description: `Ticket ${ticket} was not issued for ${service}` };
    const json = state.format === 'json' || url.searchParams.get('format') === 'JSON';
    if (json) {
      const body =
        failure === undefined
          ? { serviceResponse: { authenticationSuccess: { user: found?.user, attributes: {} } } }
          : { serviceResponse: { authenticationFailure: failure } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      return;
    }
    const p = state.format === 'xml-unprefixed' ? '' : 'cas:';
    const ns = p === '' ? `xmlns="${XML_NS}"` : `xmlns:cas="${XML_NS}"`;
    const inner =
      failure === undefined
        ? `<${p}authenticationSuccess><${p}user>${escapeXml(found?.user ?? '')}</${p}user><${p}attributes><${p}isFromNewLogin>true</${p}isFromNewLogin></${p}attributes></${p}authenticationSuccess>`
        : `<${p}authenticationFailure code="${failure.code}">${escapeXml(failure.description)}</${p}authenticationFailure>`;
    res
      .writeHead(200, { 'content-type': 'application/xml;charset=UTF-8' })
      .end(`<${p}serviceResponse ${ns}>\n  ${inner}\n</${p}serviceResponse>\n`);
  };

  const login = async (req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> => {
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const username = form.get('username') ?? '';
      const service = form.get('service') ?? url.searchParams.get('service') ?? '';
      if (users[username] === undefined || users[username] !== form.get('password')) {
        res.writeHead(401, { 'content-type': 'text/html' }).end('<p>Invalid credentials.</p>');
        return;
      }
      const tgc = `TGT-${randomBytes(12).toString('hex')}`;
      sso.set(tgc, username);
      const cookie = `CASTGC=${tgc}; Path=/cas; HttpOnly`;
      if (service === '') res.writeHead(200, { 'set-cookie': cookie }).end('<p>Logged in.</p>');
      else redirectWithTicket(res, service, username, { 'set-cookie': cookie });
      return;
    }
    const service = url.searchParams.get('service') ?? '';
    const tgc = /(?:^|;\s*)CASTGC=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const user = tgc === undefined ? undefined : sso.get(tgc);
    if (user !== undefined && service !== '') {
      redirectWithTicket(res, service, user);
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<form method="post" action="/cas/login?service=${encodeURIComponent(service)}">` +
          `<input name="username"><input name="password" type="password">` +
          `<input type="hidden" name="service" value="${escapeXml(service)}"><button>Log in</button></form>`,
      );
  };

  const handler: RequestListener = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://cas.test');
    if (url.pathname === '/cas/serviceValidate' || url.pathname === '/cas/p3/serviceValidate')
      validate(url, res);
    else if (url.pathname === '/cas/login') {
      login(req, url, res).catch(() => res.destroy());
    } else res.writeHead(404).end();
  };
  const server: Server =
    options.tls === undefined
      ? createServer(handler)
      : createHttpsServer(
          { cert: readFileSync(options.tls.cert), key: readFileSync(options.tls.key) },
          handler,
        );
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const scheme = options.tls === undefined ? 'http' : 'https';
  return Object.assign(state, { url: `${scheme}://127.0.0.1:${port}/cas` });
}
