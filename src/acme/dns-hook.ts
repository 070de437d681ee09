import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { DnsHookConfig } from '../config/acme.js';

/** One TXT record a DNS-01 challenge needs: `_acme-challenge.<domain>` = `value`. */
export interface DnsRecord {
  action: 'present' | 'cleanup';
  /** The identifier being validated, without `*.` for a wildcard. */
  domain: string;
  /** `_acme-challenge.<domain>` (no trailing dot). */
  record_name: string;
  /** base64url(SHA-256(key authorization)) (RFC 8555 §8.4). */
  value: string;
}

/** Text kept from a hook's output for the error message. */
const OUTPUT_LIMIT = 2048;

/**
 * Runs `acme.dns_hook` for one record (docs/acme.md#dns-01-through-a-hook):
 * `exec` starts the command with action, domain, record name and value
 * appended and as SWITCHYARD_ACME_* variables, and wants exit code 0 within
 * the timeout; `webhook` POSTs the record as JSON over verified TLS and wants
 * a 2xx. Throws an error naming `acme.dns_hook` otherwise.
 */
export function runDnsHook(hook: DnsHookConfig, record: DnsRecord): Promise<void> {
  return hook.type === 'exec' ? runExec(hook, record) : callWebhook(hook, record);
}

function runExec(hook: DnsHookConfig, record: DnsRecord): Promise<void> {
  const [program, ...args] = hook.command ?? [];
  if (program === undefined) return Promise.reject(new Error('acme.dns_hook.command is empty'));
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...args, record.action, record.domain, record.record_name, record.value], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        SWITCHYARD_ACME_ACTION: record.action,
        SWITCHYARD_ACME_DOMAIN: record.domain,
        SWITCHYARD_ACME_RECORD_NAME: record.record_name,
        SWITCHYARD_ACME_VALUE: record.value,
      },
    });
    let output = '';
    const keep = (chunk: Buffer) => {
      if (output.length < OUTPUT_LIMIT) output += chunk.toString('utf8');
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, hook.timeout_seconds * 1000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`acme.dns_hook.command '${program}' could not start: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const tail = output.trim().slice(0, OUTPUT_LIMIT);
      if (timedOut)
        reject(
          new Error(
            `acme.dns_hook.command ${record.action} ${record.record_name} timed out after ${hook.timeout_seconds}s (acme.dns_hook.timeout_seconds)`,
          ),
        );
      else if (code !== 0)
        reject(
          new Error(
            `acme.dns_hook.command ${record.action} ${record.record_name} exited with ${code ?? signal}${tail === '' ? '' : `: ${tail}`}`,
          ),
        );
      else resolve();
    });
  });
}

function callWebhook(hook: DnsHookConfig, record: DnsRecord): Promise<void> {
  const url = new URL(hook.url ?? '');
  const body = Buffer.from(JSON.stringify(record));
  const ca =
    hook.ca_path === undefined ? undefined : [...rootCertificates, readFileSync(hook.ca_path, 'utf8')];
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          ...hook.headers,
          'content-type': 'application/json',
          'content-length': String(body.length),
        },
        timeout: hook.timeout_seconds * 1000,
        rejectUnauthorized: true,
        agent: false,
        ...(ca === undefined ? {} : { ca }),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (text.length < OUTPUT_LIMIT) text += c;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve();
          else
            reject(
              new Error(
                `acme.dns_hook.url answered ${status} to ${record.action} ${record.record_name}${text === '' ? '' : `: ${text.slice(0, 200)}`}`,
              ),
            );
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`timed out after ${hook.timeout_seconds}s (acme.dns_hook.timeout_seconds)`)),
    );
    req.on('error', (err) =>
      reject(
        new Error(
          `acme.dns_hook.url ${url.origin}: ${record.action} ${record.record_name} failed: ${err.message}`,
        ),
      ),
    );
    req.end(body);
  });
}
