import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { useEditorKeys, useUndoable } from '../editing/history.js';
import { UndoBar } from '../editing/undo-bar.js';
import { confirmDiscard, useUnsavedGuard } from '../editing/unsaved.js';
import { ApiError, describe, getJson, getVersioned, itemPath, postJson, put, remove } from '../api.js';
import { ErrorBox } from '../error-box.js';
import { SecretInput } from '../editor/forms/secret-input.js';
import { useReadOnly } from '../session/role.js';
import type { Issue } from '../types.js';

interface Consumer {
  name: string;
  group?: string;
  description?: string;
  labels?: Record<string, string>;
  credentials?: Record<string, Record<string, unknown>>;
}

type Editing = { consumer: Consumer; etag: string | undefined; isNew: boolean };

/** Consumers with their credential types; values are never shown in the list and masked in the form. */
export function ConsumersView() {
  const readOnly = useReadOnly();
  const [items, setItems] = useState<Consumer[] | undefined>();
  const [editing, setEditing] = useState<Editing | undefined>();
  const [error, setError] = useState<{ message: string; details: Issue[] } | undefined>();
  const [notice, setNotice] = useState<string | undefined>();
  const fail = (err: unknown) =>
    setError({ message: describe(err), details: err instanceof ApiError ? err.details : [] });

  const load = useCallback(async () => setItems(await getJson<Consumer[]>('/api/consumers')), []);
  useEffect(() => {
    load().catch(fail);
  }, [load]);

  const open = async (name: string) => {
    try {
      const { value, etag } = await getVersioned<Consumer>(itemPath('consumers', name));
      setEditing({ consumer: value, etag, isNew: false });
    } catch (err) {
      fail(err);
    }
  };

  const save = async (consumer: Consumer) => {
    if (editing === undefined) return;
    setError(undefined);
    try {
      if (editing.isNew) await postJson('/api/consumers', consumer);
      else await put(itemPath('consumers', consumer.name), consumer, editing.etag);
      setNotice(`Consumer '${consumer.name}' saved.`);
      setEditing(undefined);
      await load();
    } catch (err) {
      fail(err);
    }
  };

  const del = async (name: string) => {
    if (!window.confirm(`Delete consumer '${name}'? Its credentials stop working on the next request.`))
      return;
    try {
      await remove(itemPath('consumers', name));
      setNotice(`Consumer '${name}' deleted.`);
      await load();
    } catch (err) {
      fail(err);
    }
  };

  return (
    <section className="page">
      <div className="page-head">
        <h1>Consumers</h1>
        <span className="muted">API clients and their credentials (key-auth, basic-auth, …).</span>
        {!readOnly && (
          <button
            type="button"
            onClick={() => setEditing({ consumer: { name: '' }, etag: undefined, isNew: true })}
          >
            New consumer
          </button>
        )}
      </div>
      {notice !== undefined && <div className="notice">{notice}</div>}
      {error !== undefined && <ErrorBox message={error.message} details={error.details} />}
      {editing !== undefined && (
        <ConsumerForm
          key={editing.consumer.name}
          editing={editing}
          readOnly={readOnly}
          onSubmit={(c) => void save(c)}
          onCancel={() => setEditing(undefined)}
        />
      )}
      {items === undefined ? (
        <p className="muted">Loading…</p>
      ) : items.length === 0 ? (
        <p className="muted">No consumers yet.</p>
      ) : (
        <table className="list" aria-label="Consumers">
          <thead>
            <tr>
              <th>Name</th>
              <th>Group</th>
              <th>Credentials</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {items.map((c) => (
              <tr key={c.name} data-consumer={c.name}>
                <td>{c.name}</td>
                <td>{c.group ?? ''}</td>
                <td>
                  {Object.keys(c.credentials ?? {}).map((type) => (
                    <span key={type} className="chip" title="value hidden">
                      {type} ••••
                    </span>
                  ))}
                </td>
                <td className="actions">
                  <button type="button" onClick={() => void open(c.name)}>
                    {readOnly ? 'View' : 'Edit'}
                  </button>
                  {!readOnly && (
                    <button type="button" className="danger" onClick={() => void del(c.name)}>
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

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function ConsumerForm(props: {
  editing: Editing;
  readOnly: boolean;
  onSubmit: (c: Consumer) => void;
  onCancel: () => void;
}) {
  const c = props.editing.consumer;
  const creds = c.credentials ?? {};
  const form = useUndoable({
    name: c.name,
    group: c.group ?? '',
    key: str(creds['key-auth']?.key),
    user: str(creds['basic-auth']?.username),
    password: str(creds['basic-auth']?.password),
  });
  const { name, group, key, user, password } = form.value;
  const change = (field: keyof typeof form.value) => (e: { target: { value: string } }) =>
    form.set({ ...form.value, [field]: e.target.value }, field);
  useUnsavedGuard(form.dirty && !props.readOnly);
  useEditorKeys({ undo: form.undo, redo: form.redo, enabled: !props.readOnly });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    // Credential types the form does not show are kept as they were.
    const credentials: Record<string, Record<string, unknown>> = { ...creds };
    delete credentials['key-auth'];
    delete credentials['basic-auth'];
    if (key !== '') credentials['key-auth'] = { key };
    if (user !== '') credentials['basic-auth'] = { username: user, password };
    const { group: _g, credentials: _c, ...rest } = c;
    form.load(form.value);
    props.onSubmit({
      ...rest,
      name: name.trim(),
      ...(group.trim() === '' ? {} : { group: group.trim() }),
      ...(Object.keys(credentials).length === 0 ? {} : { credentials }),
    });
  };

  return (
    <form className="panel form" aria-label="Consumer" onSubmit={submit}>
      <UndoBar history={form} dirty={form.dirty} readOnly={props.readOnly} />
      <fieldset disabled={props.readOnly}>
        <label>
          Name
          <input value={name} required readOnly={!props.editing.isNew} onChange={change('name')} />
        </label>
        <label>
          Group
          <input value={group} onChange={change('group')} />
        </label>
        <h3>key-auth</h3>
        <label>
          API key
          <SecretInput aria-label="API key" value={key} onChange={change('key')} />
        </label>
        <h3>basic-auth</h3>
        <label>
          Username
          <input value={user} onChange={change('user')} />
        </label>
        <label>
          Password
          <SecretInput aria-label="Password" value={password} onChange={change('password')} />
        </label>
      </fieldset>
      <div className="buttons">
        {!props.readOnly && (
          <button type="submit" className="primary">
            {props.editing.isNew ? 'Create consumer' : 'Save consumer'}
          </button>
        )}
        <button
          type="button"
          onClick={() => confirmDiscard(form.dirty && !props.readOnly) && props.onCancel()}
        >
          Close
        </button>
      </div>
    </form>
  );
}
