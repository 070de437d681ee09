import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { useEditorKeys, useUndoable } from '../editing/history.js';
import { UndoBar } from '../editing/undo-bar.js';
import { confirmDiscard, useUnsavedGuard } from '../editing/unsaved.js';
import { ApiError, describe, getJson, getVersioned, itemPath, postJson, put, remove } from '../api.js';
import { ErrorBox } from '../error-box.js';
import { SecretInput } from '../editor/forms/secret-input.js';
import { useReadOnly } from '../session/role.js';
import type { Issue } from '../types.js';
import { CREDENTIAL_TYPES, type CredentialType } from './credential-types.js';

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
        <span className="muted">
          API clients and their credentials (key-auth, basic-auth, jwt-auth, hmac-auth, jwe-decrypt).
        </span>
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

type Values = Record<string, Record<string, string | boolean>>;

/** The form's view of stored credentials: every known field as text (or a boolean). */
function valuesOf(creds: Record<string, Record<string, unknown>>): Values {
  const out: Values = {};
  for (const { type, fields } of CREDENTIAL_TYPES) {
    const stored = creds[type] ?? {};
    out[type] = Object.fromEntries(
      fields.map((f) => {
        const v = stored[f.key];
        return [f.key, f.kind === 'boolean' ? v === true : typeof v === 'string' ? v : ''];
      }),
    );
  }
  return out;
}

/** A credential is kept when any of its fields is filled; its empty fields are left out. */
function credentialOf(type: CredentialType, values: Record<string, string | boolean>) {
  const filled = type.fields.filter((f) =>
    f.kind === 'boolean' ? values[f.key] === true : values[f.key] !== '',
  );
  if (!filled.some((f) => f.kind !== 'boolean')) return undefined;
  return Object.fromEntries(filled.map((f) => [f.key, values[f.key]]));
}

function ConsumerForm(props: {
  editing: Editing;
  readOnly: boolean;
  onSubmit: (c: Consumer) => void;
  onCancel: () => void;
}) {
  const c = props.editing.consumer;
  const creds = c.credentials ?? {};
  const form = useUndoable({ name: c.name, group: c.group ?? '', creds: valuesOf(creds) });
  const { name, group } = form.value;
  const change = (field: 'name' | 'group') => (e: { target: { value: string } }) =>
    form.set({ ...form.value, [field]: e.target.value }, field);
  const setCred = (type: string, key: string, value: string | boolean) =>
    form.set(
      { ...form.value, creds: { ...form.value.creds, [type]: { ...form.value.creds[type], [key]: value } } },
      `${type}.${key}`,
    );
  useUnsavedGuard(form.dirty && !props.readOnly);
  useEditorKeys({ undo: form.undo, redo: form.redo, enabled: !props.readOnly });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    // Keys the form does not know (a newer credential type) are kept as they were.
    const credentials: Record<string, Record<string, unknown>> = { ...creds };
    for (const type of CREDENTIAL_TYPES) {
      const stored = credentials[type.type] ?? {};
      const known = new Set(type.fields.map((f) => f.key));
      const extra = Object.fromEntries(Object.entries(stored).filter(([k]) => !known.has(k)));
      const next = credentialOf(type, form.value.creds[type.type] ?? {});
      if (next === undefined) delete credentials[type.type];
      else credentials[type.type] = { ...extra, ...next };
    }
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
    <form className="panel form consumer-form" aria-label="Consumer" onSubmit={submit}>
      <div className="form-head">
        <h2>{props.editing.isNew ? 'New consumer' : `Consumer '${c.name}'`}</h2>
        <UndoBar history={form} dirty={form.dirty} readOnly={props.readOnly} />
      </div>
      <fieldset disabled={props.readOnly} className="plain form-fields">
        <label>
          Name
          <input value={name} required readOnly={!props.editing.isNew} onChange={change('name')} />
        </label>
        <label>
          Group
          <input value={group} onChange={change('group')} />
        </label>
        {CREDENTIAL_TYPES.map((type) => (
          <fieldset key={type.type} className="nested credential" data-credential={type.type}>
            <legend>{type.type}</legend>
            {type.fields.map((f) => {
              const value = form.value.creds[type.type]?.[f.key] ?? '';
              const text = typeof value === 'string' ? value : '';
              const set = (e: { target: { value: string } }) => setCred(type.type, f.key, e.target.value);
              switch (f.kind) {
                case 'boolean':
                  return (
                    <label key={f.key} className="switch">
                      <input
                        type="checkbox"
                        checked={value === true}
                        onChange={(e) => setCred(type.type, f.key, e.target.checked)}
                      />
                      {f.label}
                    </label>
                  );
                case 'enum':
                  return (
                    <label key={f.key}>
                      {f.label}
                      <select value={text} onChange={set}>
                        <option value="">(default)</option>
                        {(f.options ?? []).map((o) => (
                          <option key={o}>{o}</option>
                        ))}
                      </select>
                    </label>
                  );
                case 'pem':
                  return (
                    <label key={f.key}>
                      {f.label}
                      <textarea rows={3} spellCheck={false} value={text} onChange={set} />
                    </label>
                  );
                case 'secret':
                  return (
                    <label key={f.key}>
                      {f.label}
                      <SecretInput aria-label={f.label} value={text} onChange={set} />
                    </label>
                  );
                case 'text':
                  return (
                    <label key={f.key}>
                      {f.label}
                      <input value={text} onChange={set} />
                    </label>
                  );
              }
            })}
          </fieldset>
        ))}
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
