/** Helpers of the `switchyard import` tests: the command as a process, and a gateway serving its output. */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';
import { spawnGateway, waitForHttp, type GatewayProcess } from './gateway-process.js';

const bin = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function switchyard(args: string[], cwd?: string): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(cwd ? { cwd } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A fixture with its placeholder ports (`28101`, `28102`…) replaced, written into `dir`. */
export function fixture(name: string, dir: string, ports: Record<string, number> = {}): string {
  let text = readFileSync(fileURLToPath(new URL(`../fixtures/import/${name}`, import.meta.url)), 'utf8');
  for (const [from, to] of Object.entries(ports)) text = text.replaceAll(from, String(to));
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Validates a gateway file with `switchyard validate` (the real validator, as a user runs it). */
export async function validateFile(dir: string, gateway: string): Promise<CommandResult> {
  const system = join(dir, 'validate-system.yaml');
  writeFileSync(system, 'listener: { bind: 127.0.0.1, port: 0 }\n');
  return switchyard(['validate', '--system-config', system, '--gateway-config', gateway]);
}

/** A gateway process serving `gateway` on a free port; `base` is its data-plane URL. */
export async function serve(dir: string, gateway: string): Promise<{ gw: GatewayProcess; base: string }> {
  const port = await freePort();
  const system = join(dir, 'system.yaml');
  writeFileSync(system, `listener: { bind: 127.0.0.1, port: ${port} }\nlogging: { level: warn }\n`);
  const gw = spawnGateway(['--system-config', system, '--gateway-config', gateway]);
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${base}/`, 30000);
  } catch (err) {
    await gw.stop();
    throw new Error(`${(err as Error).message}\n${gw.output()}`, { cause: err });
  }
  return { gw, base };
}

/** What the echo origin (test/support/origins.ts) answers. */
export interface Echoed {
  origin: string;
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
  body: string;
}

export interface Answer {
  status: number;
  headers: { get(name: string): string | undefined };
  text: string;
  json(): Echoed;
}

/** One request through node:http, which (unlike fetch) lets a test set Host. */
export function request(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        const h = res.headers;
        resolve({
          status: res.statusCode ?? 0,
          headers: {
            get: (name) => {
              const v = h[name.toLowerCase()];
              return Array.isArray(v) ? v.join(', ') : v;
            },
          },
          text,
          json: () => JSON.parse(text) as Echoed,
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
