import { useState } from 'react';
import type { PluginEntry } from '../types.js';
import type { PolicyNode } from './graph.js';
import { checkConfig } from './schema-check.js';

export interface NodeEdit {
  config: Record<string, unknown> | null | undefined;
  configRef: string | undefined;
}

interface Props {
  node: PolicyNode;
  plugin: PluginEntry | undefined;
  takenIds: ReadonlySet<string>;
  onApply: (id: string, edit: NodeEdit) => void;
  onRename: (id: string, next: string) => void;
  onDelete: (id: string) => void;
}

const pretty = (config: unknown): string => (config == null ? '{}' : JSON.stringify(config, null, 2));

/** The selected node: rename it, edit its config as JSON (checked against the plugin's schema), delete it. */
export function NodePanel({ node, plugin, takenIds, onApply, onRename, onDelete }: Props) {
  const [text, setText] = useState(() => pretty(node.data.config));
  const [configRef, setConfigRef] = useState(node.data.configRef ?? '');
  const [newId, setNewId] = useState(node.id);
  const [problems, setProblems] = useState<string[]>([]);
  const [applied, setApplied] = useState(false);

  const apply = () => {
    setApplied(false);
    let parsed: unknown;
    try {
      parsed = text.trim() === '' ? null : JSON.parse(text);
    } catch (err) {
      setProblems([`Invalid JSON: ${(err as Error).message}`]);
      return;
    }
    if (parsed !== null && (typeof parsed !== 'object' || Array.isArray(parsed))) {
      setProblems(['The config must be a JSON object, e.g. {"key": "value"}.']);
      return;
    }
    const ref = configRef.trim() === '' ? undefined : configRef.trim();
    const found = plugin === undefined ? [] : checkConfig(plugin.schema, parsed, ref !== undefined);
    setProblems(found);
    if (found.length > 0) return;
    const config = parsed as Record<string, unknown> | null;
    // An empty config is stored as no config at all, the way gateway.yaml usually has it.
    const empty = config === null || Object.keys(config).length === 0;
    onApply(node.id, {
      config: empty && node.data.config === undefined ? undefined : config,
      configRef: ref,
    });
    setApplied(true);
  };

  const rename = () => {
    const next = newId.trim();
    if (next === node.id) return;
    if (next === '' || next.includes('.') || takenIds.has(next)) {
      setProblems([
        next === ''
          ? 'A node id cannot be empty.'
          : next.includes('.')
            ? 'A node id cannot contain a dot (edges use node.port).'
            : `Another node is already called '${next}'.`,
      ]);
      return;
    }
    setProblems([]);
    onRename(node.id, next);
  };

  return (
    <div className="node-panel" aria-label="Node">
      <h2>
        Node <code>{node.id}</code>
      </h2>
      <p className="muted">
        <strong>{node.data.type}</strong>
        {plugin === undefined ? ' (not a registered plugin type)' : ` — ${plugin.description}`}
      </p>
      <div className="row">
        <label>
          Id
          <input aria-label="Node id" value={newId} onChange={(e) => setNewId(e.target.value)} />
        </label>
        <button type="button" onClick={rename} disabled={newId.trim() === node.id}>
          Rename
        </button>
      </div>
      {node.data.outputs.length > 0 && (
        <dl className="ports">
          {node.data.outputs.map((p) => (
            <div key={p.name}>
              <dt className={`kind-${p.kind}`}>{p.name}</dt>
              <dd>{p.description}</dd>
            </div>
          ))}
        </dl>
      )}
      <label>
        Shared config (config_ref)
        <input
          aria-label="config_ref"
          value={configRef}
          placeholder="none"
          onChange={(e) => setConfigRef(e.target.value)}
        />
      </label>
      <label>
        Config (JSON)
        <textarea
          aria-label="Node config"
          spellCheck={false}
          rows={14}
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setApplied(false);
          }}
        />
      </label>
      {problems.length > 0 && (
        <div className="error-box" role="alert" aria-label="Config problems">
          <div>Not applied:</div>
          <ul>
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </div>
      )}
      {applied && <div className="notice">Applied to the graph. Save to make it live.</div>}
      <div className="buttons">
        <button type="button" onClick={apply}>
          Apply config
        </button>
        <button type="button" className="danger" onClick={() => onDelete(node.id)}>
          Delete node
        </button>
      </div>
    </div>
  );
}
