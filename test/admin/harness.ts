import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAdminServer, type AdminServer, type AdminServerOptions } from '../../src/admin/server.js';
import type { Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/core/logger.js';
import { startGateway } from '../support/in-process.js';
import { tempDir } from '../support/temp-dir.js';

export const USER = 'admin';
export const PASSWORD = 'correct horse';

export const basic = (user = USER, password = PASSWORD): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A policy answering `body` with a mocking node. */
export const mockPolicy = (name: string, body: string, status = 200) => ({
  name,
  nodes: [
    { id: 'in', type: 'listener' },
    {
      id: 'm',
      type: 'mocking',
      config: { response_example: body, response_status: status, content_type: 'text/plain' },
    },
    { id: 'out', type: 'client' },
  ],
  edges: [
    { from: 'in.out', to: 'm.in' },
    { from: 'm.success', to: 'out.in' },
  ],
});

export const mockPolicyYaml = (name: string, body: string) => `
  - name: ${name}
    nodes:
      - { id: in, type: listener }
      - { id: m, type: mocking, config: { response_example: '${body}', content_type: text/plain } }
      - { id: out, type: client }
    edges:
      - { from: in.out, to: m.in }
      - { from: m.success, to: out.in }
`;

/** A gateway.yaml with route `hello` (/hello) → policy `hello-policy` answering "hello". */
export const BASE_YAML = `# seeded by the admin tests
routes:
  # the first route
  - name: hello
    match: { path: /hello }
    policy: hello-policy
policies:${mockPolicyYaml('hello-policy', 'hello')}`;

export interface AdminHarness {
  gateway: Gateway;
  admin: AdminServer;
  /** Data-plane base URL. */
  data: string;
  /** Admin base URL. */
  url: string;
  /** gateway.yaml path when the harness wrote one. */
  file: string | undefined;
  /** Authenticated JSON call to the Admin API. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  stop(): Promise<void>;
}

export interface HarnessOptions {
  gatewayYaml?: string;
  /** Extra keys of the `admin:` block, as YAML flow entries (`ui_enabled: false`). */
  admin?: string;
  /** Extra top-level system.yaml text. */
  system?: string;
  /** Write gateway.yaml to a temp dir and run from it (persistence, reload). */
  onDisk?: boolean;
  options?: AdminServerOptions;
  env?: NodeJS.ProcessEnv;
}

/** An in-process gateway plus its admin listener, both on loopback port 0. */
export async function startAdmin(opts: HarnessOptions = {}): Promise<AdminHarness> {
  const yaml = opts.gatewayYaml ?? BASE_YAML;
  const dir = opts.onDisk === true ? tempDir('switchyard-admin-') : undefined;
  const file = dir === undefined ? undefined : join(dir.path, 'gateway.yaml');
  if (file !== undefined) writeFileSync(file, yaml);
  const systemYaml = [
    'listener: { bind: 127.0.0.1, port: 0 }',
    'timeouts: { shutdown_timeout_seconds: 5 }',
    `admin: { bind: 127.0.0.1, port: 0, username: ${USER}, password: "${PASSWORD}"${opts.admin ? `, ${opts.admin}` : ''} }`,
    opts.system ?? '',
  ].join('\n');
  const running = await startGateway(yaml, {
    systemYaml,
    ...(file === undefined ? {} : { gatewayPath: file }),
    ...(opts.env === undefined ? {} : { env: opts.env }),
  });
  const adminConfig = running.gateway.system.admin;
  if (adminConfig === undefined) throw new Error('admin block missing');
  const admin = await startAdminServer(running.gateway, adminConfig, silentLogger, {
    print: () => undefined,
    ...opts.options,
  });
  return {
    gateway: running.gateway,
    admin,
    data: running.url,
    url: admin.url,
    file,
    call(method, path, body, headers = {}) {
      return fetch(admin.url + path, {
        method,
        headers: {
          authorization: basic(),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    },
    async stop() {
      await Promise.all([admin.close(), running.stop()]);
      dir?.remove();
    },
  };
}

/** Status and parsed JSON body of a response. */
export async function read(res: Response): Promise<{ status: number; body: unknown }> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: keep the text.
  }
  return { status: res.status, body };
}

export async function getText(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}
