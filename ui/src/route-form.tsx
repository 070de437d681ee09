import { useState, type FormEvent } from 'react';
import { useEditorKeys, useUndoable } from './editing/history.js';
import { UndoBar } from './editing/undo-bar.js';
import { confirmDiscard, useUnsavedGuard } from './editing/unsaved.js';
import { ErrorBox } from './error-box.js';
import type { Issue, RouteConfig, RouteMatch } from './types.js';

interface Props {
  /** The route being edited; undefined to create one. */
  initial: RouteConfig | undefined;
  policies: string[];
  onSubmit: (route: RouteConfig) => Promise<void>;
  readOnly?: boolean;
  onCancel: () => void;
  describeError: (err: unknown) => { message: string; details: Issue[] };
}

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** Create or edit one route; keys the form does not show (e.g. `host: null`) are kept. */
export function RouteForm({ initial, policies, onSubmit, onCancel, describeError, readOnly = false }: Props) {
  const m = initial?.match ?? {};
  const form = useUndoable({
    name: initial?.name ?? '',
    path: m.path ?? '',
    methods: (m.methods ?? []).join(', '),
    hosts: (m.hosts ?? (typeof m.host === 'string' ? [m.host] : [])).join(', '),
    headers: m.headers === undefined ? '' : JSON.stringify(m.headers),
    // No policy is chosen for the user: a new route names its policy on purpose (F30).
    policy: initial?.policy ?? '',
    description: initial?.description ?? '',
  });
  const { name, path, methods, hosts, headers, policy, description } = form.value;
  const field = (key: keyof typeof form.value) => ({
    name: key,
    value: form.value[key],
    onChange: (e: { target: { value: string } }) => form.set({ ...form.value, [key]: e.target.value }, key),
  });
  useUnsavedGuard(form.dirty && !readOnly);
  useEditorKeys({ undo: form.undo, redo: form.redo, enabled: !readOnly });
  const [error, setError] = useState<{ message: string; details: Issue[] } | undefined>();
  const [busy, setBusy] = useState(false);

  const build = (): RouteConfig => {
    const match: RouteMatch = { ...m };
    delete match.path;
    delete match.methods;
    delete match.headers;
    if (path.trim() !== '') match.path = path.trim();
    const methodList = list(methods).map((s) => s.toUpperCase());
    if (methodList.length > 0) match.methods = methodList;
    const hostList = list(hosts);
    // A single host keeps the spelling it was read with (`host` or `hosts`).
    const [single] = hostList;
    if (
      hostList.length === 1 &&
      single !== undefined &&
      typeof m.host === 'string' &&
      m.hosts === undefined
    ) {
      match.host = single;
    } else {
      if (typeof m.host === 'string') delete match.host;
      delete match.hosts;
      if (hostList.length > 0) match.hosts = hostList;
    }
    if (headers.trim() !== '') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(headers);
      } catch (err) {
        throw new Error(`Headers: invalid JSON (${(err as Error).message})`, { cause: err });
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new Error('Headers: expected a JSON object such as {"x-tenant": "acme"}');
      }
      match.headers = parsed as Record<string, string>;
    }
    return {
      name: name.trim(),
      match,
      policy: policy.trim(),
      ...(description.trim() === '' ? {} : { description: description.trim() }),
      // The form has no priority field: an edit keeps the route's precedence as it was.
      ...(initial?.priority === undefined ? {} : { priority: initial.priority }),
    };
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      await onSubmit(build());
      form.load(form.value);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card form" onSubmit={(e) => void submit(e)} aria-label="Route">
      <div className="form-head">
        <h2>
          {initial === undefined ? 'New route' : `${readOnly ? 'Route' : 'Edit route'} '${initial.name}'`}
        </h2>
        <UndoBar history={form} dirty={form.dirty} readOnly={readOnly} />
      </div>
      <fieldset className="plain" disabled={readOnly}>
        <label>
          Name
          <input {...field('name')} disabled={initial !== undefined} required />
        </label>
        <label>
          Path
          <input {...field('path')} placeholder="/orders/*" />
        </label>
        <label>
          Methods
          <input {...field('methods')} placeholder="GET, POST (empty: any)" />
        </label>
        <label>
          Hosts
          <input {...field('hosts')} placeholder="api.example.com (empty: any)" />
        </label>
        <label>
          Headers
          <input {...field('headers')} placeholder='{"x-tenant": "acme"} (empty: any)' />
        </label>
        <label>
          Policy
          <select {...field('policy')} required>
            <option value="">— choose a policy —</option>
            {(policy === '' || policies.includes(policy) ? policies : [policy, ...policies]).map((p) => (
              <option key={p} value={p}>
                {policies.includes(p) ? p : `${p} (missing)`}
              </option>
            ))}
          </select>
        </label>
        <label>
          Description
          <input {...field('description')} />
        </label>
      </fieldset>
      {error !== undefined && <ErrorBox message={error.message} details={error.details} />}
      <div className="buttons">
        {!readOnly && (
          <button type="submit" disabled={busy}>
            {initial === undefined ? 'Create route' : 'Save route'}
          </button>
        )}
        <button type="button" onClick={() => confirmDiscard(form.dirty && !readOnly) && onCancel()}>
          {readOnly ? 'Close' : 'Cancel'}
        </button>
      </div>
    </form>
  );
}
