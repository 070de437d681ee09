import { useEffect, useState } from 'react';
import { describe, postJson } from '../../api.js';

/**
 * The sample request every template preview renders against, in the
 * sandbox's `context` shape (docs/editor.md#template-preview).
 */
export const SAMPLE = {
  method: 'GET',
  path: '/orders/42?page=2&sort=asc',
  host: 'api.example.com',
  scheme: 'https',
  headers: { 'user-agent': 'curl/8.5.0', 'x-tenant-id': 'acme', accept: '*/*', cookie: 'session=abc' },
  remote_addr: '203.0.113.7:51234',
  message: { 'consumer.name': 'ada', 'consumer.group': 'admins' },
  response: { status_code: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' },
} as const;

export const SAMPLE_TITLE =
  'Rendered by the gateway for GET https://api.example.com/orders/42?page=2&sort=asc';

interface PreviewAnswer {
  preview: string;
  warnings: string[];
}

/** Waits this long after the last keystroke before asking the gateway. */
const DEBOUNCE_MS = 150;

/**
 * What a templated field renders, asked of the gateway's own renderer
 * (`POST /api/templates/preview`): one line of at most 80 characters, and
 * the renderer's warnings. `$name` variables render when the text has any
 * (the legacy field groups render them; other fields keep them as text).
 */
export function TemplatePreview({ name, text }: { name: string; text: string }) {
  const [answer, setAnswer] = useState<PreviewAnswer | undefined>();
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    let stale = false;
    const timer = window.setTimeout(() => {
      postJson<PreviewAnswer>('/api/templates/preview', {
        template: text,
        request: SAMPLE,
        legacy: /\$\{?[a-z_]/.test(text),
      }).then(
        (a) => {
          if (stale) return;
          setAnswer(a);
          setError(undefined);
        },
        (err: unknown) => {
          if (!stale) setError(describe(err));
        },
      );
    }, DEBOUNCE_MS);
    return () => {
      stale = true;
      window.clearTimeout(timer);
    };
  }, [text]);
  return (
    <>
      <output
        className="preview"
        aria-label={`Preview of ${name}`}
        aria-busy={answer === undefined}
        title={SAMPLE_TITLE}
      >
        {error !== undefined ? `(no preview: ${error})` : (answer?.preview ?? '…')}
      </output>
      {answer !== undefined && answer.warnings.length > 0 && (
        <ul className="preview-warnings" aria-label={`Template warnings of ${name}`}>
          {answer.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      )}
    </>
  );
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
