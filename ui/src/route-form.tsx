import { useState, type FormEvent } from 'react';
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
  const [name, setName] = useState(initial?.name ?? '');
  const [path, setPath] = useState(m.path ?? '');
  const [methods, setMethods] = useState((m.methods ?? []).join(', '));
  const [hosts, setHosts] = useState((m.hosts ?? (typeof m.host === 'string' ? [m.host] : [])).join(', '));
  const [headers, setHeaders] = useState(m.headers === undefined ? '' : JSON.stringify(m.headers));
  const [policy, setPolicy] = useState(initial?.policy ?? policies[0] ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
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
    };
  };

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      await onSubmit(build());
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="card form" onSubmit={(e) => void submit(e)} aria-label="Route">
      <h2>
        {initial === undefined ? 'New route' : `${readOnly ? 'Route' : 'Edit route'} '${initial.name}'`}
      </h2>
      <fieldset className="plain" disabled={readOnly}>
        <label>
          Name
          <input
            name="name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            disabled={initial !== undefined}
            required
          />
        </label>
        <label>
          Path
          <input name="path" value={path} placeholder="/orders/*" onChange={(e) => setPath(e.target.value)} />
        </label>
        <label>
          Methods
          <input
            name="methods"
            value={methods}
            placeholder="GET, POST (empty: any)"
            onChange={(e) => setMethods(e.target.value)}
          />
        </label>
        <label>
          Hosts
          <input
            name="hosts"
            value={hosts}
            placeholder="api.example.com (empty: any)"
            onChange={(e) => setHosts(e.target.value)}
          />
        </label>
        <label>
          Headers
          <input
            name="headers"
            value={headers}
            placeholder='{"x-tenant": "acme"} (empty: any)'
            onChange={(e) => setHeaders(e.target.value)}
          />
        </label>
        <label>
          Policy
          <input
            name="policy"
            value={policy}
            list="policy-names"
            onChange={(e) => setPolicy(e.target.value)}
            required
          />
          <datalist id="policy-names">
            {policies.map((p) => (
              <option key={p} value={p} />
            ))}
          </datalist>
        </label>
        <label>
          Description
          <input name="description" value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
      </fieldset>
      {error !== undefined && <ErrorBox message={error.message} details={error.details} />}
      <div className="buttons">
        {!readOnly && (
          <button type="submit" disabled={busy}>
            {initial === undefined ? 'Create route' : 'Save route'}
          </button>
        )}
        <button type="button" onClick={onCancel}>
          {readOnly ? 'Close' : 'Cancel'}
        </button>
      </div>
    </form>
  );
}
