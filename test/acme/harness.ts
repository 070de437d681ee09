import { connect, type PeerCertificate } from 'node:tls';
import { startAdminServer, type AdminServer } from '../../src/admin/server.js';
import type { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { startGateway } from '../support/in-process.js';

export const USER = 'admin';
export const PASSWORD = 'acme test password';
export const DOMAIN = 'gw.test';

/** A route `/hello` answering "hello" so TLS clients can make a real request. */
export const HELLO_YAML = `
routes:
  - { name: hello, match: { path: /hello }, policy: hello }
policies:
  - name: hello
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: hello, content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

export interface AcmeGateway {
  gateway: Gateway;
  admin: AdminServer;
  port: number;
  call(method: string, path: string): Promise<{ status: number; body: Record<string, unknown> }>;
  stop(): Promise<void>;
}

/**
 * An in-process gateway on `port` with its admin listener; `system` is the rest of system.yaml,
 * `adminExtra` more keys of the `admin:` block (`tls: {...}`).
 */
export async function startAcmeGateway(
  port: number,
  system: string,
  gatewayYaml = HELLO_YAML,
  adminExtra = '',
): Promise<AcmeGateway> {
  const running = await startGateway(gatewayYaml, {
    systemYaml: [
      `listener: { bind: 127.0.0.1, port: ${port} }`,
      'timeouts: { shutdown_timeout_seconds: 2 }',
      `admin: { bind: 127.0.0.1, port: 0, username: ${USER}, password: "${PASSWORD}"${adminExtra === '' ? '' : `, ${adminExtra}`} }`,
      system,
    ].join('\n'),
  });
  const adminConfig = running.gateway.system.admin;
  if (adminConfig === undefined) throw new Error('admin block missing');
  const admin = await startAdminServer(running.gateway, adminConfig, silentLogger, {
    print: () => undefined,
  });
  const auth = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
  return {
    gateway: running.gateway,
    admin,
    port: running.port,
    async call(method, path) {
      const res = await fetch(admin.url + path, { method, headers: { authorization: auth } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    async stop() {
      await Promise.all([admin.close(), running.stop()]);
    },
  };
}

export interface Handshake {
  authorized: boolean;
  authorizationError: string | undefined;
  alpn: string | false | null;
  cert: PeerCertificate;
}

/** One TLS handshake against the data plane with SNI `servername`. */
export function handshake(
  port: number,
  options: { servername?: string; ca?: string; alpn?: string[] } = {},
): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      servername: options.servername ?? DOMAIN,
      ALPNProtocols: options.alpn ?? ['h2', 'http/1.1'],
      rejectUnauthorized: false,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    });
    socket.once('secureConnect', () => {
      const result = {
        authorized: socket.authorized,
        authorizationError: socket.authorizationError?.message,
        alpn: socket.alpnProtocol,
        cert: socket.getPeerCertificate(),
      };
      socket.end();
      resolve(result);
    });
    socket.once('error', reject);
  });
}
