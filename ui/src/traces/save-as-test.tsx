import { useEffect, useMemo, useState } from 'react';
import { parse, stringify } from 'yaml';
import { describe, getJson, put } from '../api.js';
import type { RouteConfig } from '../types.js';
import { defaultTestName, testFromRun, type SandboxAsk } from './policy-test-entry.js';
import type { Trace } from './trace-types.js';

/** GET /api/config: the running configuration as YAML and its ETag (docs/config-as-code.md#apply). */
async function runningConfig(): Promise<{ config: Record<string, unknown>; etag: string | undefined }> {
  const res = await fetch('/api/config');
  if (!res.ok) throw new Error(`GET /api/config: ${res.status} ${await res.text()}`);
  const config = parse(await res.text()) as Record<string, unknown> | null;
  return { config: config ?? {}, etag: res.headers.get('etag') ?? undefined };
}

/**
 * Turns a sandbox run into a policy test (docs/config-as-code.md#policy-tests): the same request
 * and mocks, expecting the status and ports the run took. Copy it, download it as a test file for
 * `switchyard test`, or add it to the `tests:` of the running configuration.
 */
export function SaveAsTest({ policy, ask, trace }: { policy: string; ask: SandboxAsk; trace: Trace }) {
  const [name, setName] = useState(() => defaultTestName(ask, trace));
  const [message, setMessage] = useState<{ ok: boolean; text: string } | undefined>();
  const [routes, setRoutes] = useState<RouteConfig[] | undefined>();
  useEffect(() => {
    getJson<RouteConfig[]>('/api/routes').then(setRoutes, () => setRoutes(undefined));
  }, []);
  const entry = useMemo(() => testFromRun(name.trim(), ask, trace), [name, ask, trace]);
  const yaml = stringify({ tests: [entry] });
  const reaching = (routes ?? []).filter((r) => r.policy === policy);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(yaml);
      setMessage({ ok: true, text: 'Copied.' });
    } catch (err) {
      setMessage({ ok: false, text: `Copy failed (${describe(err)}): select the text and copy it.` });
    }
  };
  const download = () => {
    const url = URL.createObjectURL(new Blob([yaml], { type: 'text/yaml' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${policy}.tests.yaml`;
    a.click();
    URL.revokeObjectURL(url);
  };
  const append = async () => {
    setMessage(undefined);
    try {
      const { config, etag } = await runningConfig();
      const tests = Array.isArray(config['tests']) ? (config['tests'] as { name?: unknown }[]) : [];
      if (tests.some((t) => t.name === entry.name)) {
        setMessage({ ok: false, text: `A test named '${entry.name}' exists already: rename this one.` });
        return;
      }
      await put('/api/config', { ...config, tests: [...tests, entry] }, etag);
      setMessage({ ok: true, text: `Added '${entry.name}' to tests: (${tests.length + 1} tests).` });
    } catch (err) {
      setMessage({ ok: false, text: describe(err) });
    }
  };

  return (
    <section className="save-test" aria-label="Save as test">
      <h3>Save this run as a test</h3>
      <p className="muted">
        <code>switchyard test</code> sends the request through the router, so its path must reach{' '}
        <code>{policy}</code>
        {routes !== undefined &&
          (reaching.length === 0
            ? ': no route uses this policy yet.'
            : ` (routes: ${reaching.map((r) => `${r.name} ${r.match.path ?? ''}`.trim()).join(', ')}).`)}
      </p>
      <label>
        Test name
        <input value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <pre className="yaml-preview" aria-label="Test entry">
        {yaml}
      </pre>
      <div className="buttons">
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
        <button type="button" onClick={download}>
          Download
        </button>
        <button type="button" disabled={name.trim() === ''} onClick={() => void append()}>
          Add to gateway.yaml tests
        </button>
      </div>
      {message !== undefined && (
        <div className={message.ok ? 'notice' : 'error-box'} role="status">
          {message.text}
        </div>
      )}
    </section>
  );
}
