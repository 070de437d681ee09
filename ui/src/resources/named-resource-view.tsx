import { useCallback, useEffect, useState } from 'react';
import {
  ApiError,
  describe,
  getJson,
  getVersioned,
  itemPath,
  postJson,
  put,
  remove,
  type Kind,
} from '../api.js';
import { ErrorBox } from '../error-box.js';
import { RawEditor } from '../editor/forms/raw-editor.js';
import { useReadOnly } from '../session/role.js';
import type { Issue } from '../types.js';
import { confirmDiscard, useUnsavedGuard } from '../editing/unsaved.js';
import { supernodeHref } from '../use-hash-route.js';
import { SharedConfigEditor } from './shared-config-editor.js';
import { StorePing } from './store-ping.js';

type ResourceKind = Extract<Kind, 'supernodes' | 'plugin-configs' | 'stores'>;

interface Named {
  name: string;
  type?: string;
  description?: string;
  [key: string]: unknown;
}

const TITLES: Record<ResourceKind, { title: string; label: string; hint: string; blank: object }> = {
  supernodes: {
    title: 'Supernodes',
    label: 'supernode',
    hint: 'Reusable subgraphs, edited as graphs: an instance in a policy is a node of type supernode with config {name}.',
    blank: {
      nodes: [
        { id: 'input', type: 'input' },
        { id: 'output', type: 'output' },
      ],
      edges: [{ from: 'input.out', to: 'output.in' }],
    },
  },
  'plugin-configs': {
    title: 'Shared configs',
    label: 'shared config',
    hint: 'Plugin configs shared by name: a node with config_ref gets these keys under its own.',
    blank: { type: 'mocking', config: {} },
  },
  stores: {
    title: 'Stores',
    label: 'store',
    hint: 'Redis or Valkey connections used by limits, caches and sessions.',
    blank: { type: 'redis', url: 'redis://127.0.0.1:6379' },
  },
};

const summary = (kind: ResourceKind, item: Named): string => {
  if (kind === 'supernodes') {
    const nodes = Array.isArray(item.nodes) ? item.nodes.length : 0;
    return `${nodes} nodes`;
  }
  if (kind === 'stores') return `${item.type ?? ''} ${typeof item.url === 'string' ? item.url : ''}`;
  return item.type ?? '';
};

type Editing = { name: string; value: Named; etag: string | undefined; isNew: boolean };

/** Lists one named resource kind; edit an item as YAML/JSON; stores can be pinged. */
export function NamedResourceView({ kind }: { kind: ResourceKind }) {
  const meta = TITLES[kind];
  const readOnly = useReadOnly();
  const [items, setItems] = useState<Named[] | undefined>();
  const [editing, setEditing] = useState<Editing | undefined>();
  const [newName, setNewName] = useState('');
  const [error, setError] = useState<{ message: string; details: Issue[] } | undefined>();
  const [notice, setNotice] = useState<string | undefined>();

  const fail = (err: unknown) =>
    setError({ message: describe(err), details: err instanceof ApiError ? err.details : [] });
  const load = useCallback(async () => setItems(await getJson<Named[]>(`/api/${kind}`)), [kind]);
  useEffect(() => {
    load().catch(fail);
  }, [load]);

  const [rawDirty, setRawDirty] = useState(false);
  useUnsavedGuard(rawDirty && !readOnly);

  const open = async (name: string) => {
    if (kind === 'supernodes') {
      window.location.hash = supernodeHref(name);
      return;
    }
    if (!confirmDiscard()) return;
    setRawDirty(false);
    setError(undefined);
    try {
      const { value, etag } = await getVersioned<Named>(itemPath(kind, name));
      setEditing({ name, value, etag, isNew: false });
    } catch (err) {
      fail(err);
    }
  };

  const save = async (value: unknown): Promise<boolean> => {
    if (editing === undefined) return false;
    setError(undefined);
    const body = { ...(value as object), name: editing.name };
    try {
      if (editing.isNew && kind === 'stores') await postJson(`/api/${kind}`, body);
      else await put(itemPath(kind, editing.name), body, editing.isNew ? undefined : editing.etag);
      setNotice(`Saved ${meta.label} '${editing.name}'.`);
      setEditing(undefined);
      await load();
      return true;
    } catch (err) {
      fail(err);
      return false;
    }
  };

  const del = async (name: string) => {
    if (!window.confirm(`Delete ${meta.label} '${name}'?`)) return;
    setError(undefined);
    try {
      await remove(itemPath(kind, name));
      setNotice(`Deleted ${meta.label} '${name}'.`);
      await load();
    } catch (err) {
      fail(err);
    }
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>{meta.title}</h1>
        <span className="muted">{meta.hint}</span>
      </div>
      {!readOnly && (
        <form
          className="row"
          aria-label={`New ${meta.label}`}
          onSubmit={(e) => {
            e.preventDefault();
            const name = newName.trim();
            if (name === '') return;
            if (kind === 'supernodes') {
              window.location.hash = supernodeHref(name);
              return;
            }
            if (!confirmDiscard()) return;
            setRawDirty(false);
            setEditing({ name, value: { name, ...meta.blank }, etag: undefined, isNew: true });
            setNewName('');
          }}
        >
          <input
            aria-label={`New ${meta.label} name`}
            value={newName}
            onChange={(e) => setNewName(e.target.value)}
          />
          <button type="submit">New {meta.label}</button>
        </form>
      )}
      {notice !== undefined && <div className="notice">{notice}</div>}
      {error !== undefined && <ErrorBox message={error.message} details={error.details} />}
      {editing !== undefined && kind === 'plugin-configs' && (
        <SharedConfigEditor
          key={editing.name}
          name={editing.name}
          initial={withoutName(editing.value)}
          onSave={(value) => save(value)}
          onClose={() => setEditing(undefined)}
        />
      )}
      {editing !== undefined && kind !== 'plugin-configs' && (
        <div className="panel" aria-label={`Edit ${meta.label}`}>
          <h2>
            {editing.isNew ? 'New' : readOnly ? 'View' : 'Edit'} {meta.label} <code>{editing.name}</code>
            {rawDirty && !readOnly && <span className="badge warn">Unsaved changes</span>}
          </h2>
          <RawEditor
            key={editing.name}
            label={`${meta.label} definition`}
            value={withoutName(editing.value)}
            readOnly={readOnly}
            applyLabel="Save"
            onEdit={() => setRawDirty(true)}
            onApply={(value) => {
              void save(value).then((ok) => ok && setRawDirty(false));
              return [];
            }}
          />
          <button
            type="button"
            onClick={() => {
              if (!confirmDiscard(rawDirty && !readOnly)) return;
              setRawDirty(false);
              setEditing(undefined);
            }}
          >
            Close
          </button>
        </div>
      )}
      {items === undefined ? (
        <p className="muted">Loading…</p>
      ) : items.length === 0 ? (
        <p className="muted">None yet.</p>
      ) : (
        <table className="list" aria-label={meta.title}>
          <thead>
            <tr>
              <th>Name</th>
              <th>What</th>
              <th>Description</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.name} data-name={item.name}>
                <td>{item.name}</td>
                <td>
                  <code>{summary(kind, item)}</code>
                </td>
                <td className="muted">{item.description ?? ''}</td>
                <td className="actions">
                  {kind === 'stores' && !readOnly && <StorePing name={item.name} />}
                  {kind === 'supernodes' ? (
                    <a className="button" href={supernodeHref(item.name)} aria-label={`Open ${item.name}`}>
                      {readOnly ? 'View' : 'Open'}
                    </a>
                  ) : (
                    <button type="button" onClick={() => void open(item.name)}>
                      {readOnly ? 'View' : 'Edit'}
                    </button>
                  )}
                  {!readOnly && (
                    <button type="button" className="danger" onClick={() => void del(item.name)}>
                      Delete
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function withoutName(value: Named): Record<string, unknown> {
  const { name: _name, ...rest } = value;
  return rest;
}
