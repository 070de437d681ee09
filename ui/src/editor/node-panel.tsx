import { useState } from 'react';
import { useReadOnly } from '../session/role.js';
import type { PluginEntry, PolicyConfig } from '../types.js';
import { RawEditor } from './forms/raw-editor.js';
import { ReferenceSelect } from './forms/reference-select.js';
import { SchemaForm } from './forms/schema-form.js';
import type { PolicyEdge, PolicyNode } from './graph.js';
import { checkConfig } from './schema-check.js';
import { SupernodeInside } from './supernode-inside.js';
import { Wiring } from './wiring.js';

export interface NodeEdit {
  config: Record<string, unknown> | null | undefined;
  configRef: string | undefined;
}

interface Props {
  node: PolicyNode;
  plugin: PluginEntry | undefined;
  supernodes: ReadonlyMap<string, Omit<PolicyConfig, 'name'>>;
  takenIds: ReadonlySet<string>;
  /** The whole graph, for the wiring selects. */
  nodes: readonly PolicyNode[];
  edges: readonly PolicyEdge[];
  /** `field` names the key edited, so typing into one field undoes as one step. */
  onApply: (id: string, edit: NodeEdit, field?: string) => void;
  onRename: (id: string, next: string) => void;
  onWire: (source: string, port: string, target: string | undefined) => void;
  onDelete: (id: string) => void;
}

/** The selected node: its ports, its config as a schema form or raw YAML/JSON, rename, delete. */
export function NodePanel(props: Props) {
  const { node, plugin, supernodes, takenIds, onApply, onRename, onDelete } = props;
  const readOnly = useReadOnly();
  const [mode, setMode] = useState<'form' | 'raw'>(plugin === undefined ? 'raw' : 'form');
  const [rawVersion, setRawVersion] = useState(0);
  const [newId, setNewId] = useState(node.id);
  const [problems, setProblems] = useState<string[]>([]);
  const [applied, setApplied] = useState(false);
  const configRef = node.data.configRef;

  const edit = (config: Record<string, unknown> | null, ref: string | undefined, field?: string) => {
    // An emptied config is stored as no config at all, the way gateway.yaml usually has it.
    const empty = config === null || Object.keys(config).length === 0;
    onApply(
      node.id,
      { config: empty && node.data.config === undefined ? undefined : config, configRef: ref },
      field,
    );
  };

  const applyRaw = (parsed: unknown): string[] => {
    setApplied(false);
    if (parsed !== null && (typeof parsed !== 'object' || Array.isArray(parsed)))
      return ['The config must be an object (key: value).'];
    const found = plugin === undefined ? [] : checkConfig(plugin.schema, parsed, configRef !== undefined);
    if (found.length > 0) return found;
    edit(parsed as Record<string, unknown> | null, configRef);
    setApplied(true);
    return [];
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

  const supernodeName =
    node.data.type === 'supernode' && typeof node.data.config?.name === 'string'
      ? node.data.config.name
      : undefined;

  return (
    <div className="node-panel" aria-label="Node">
      <h2>
        Node <code>{node.id}</code>
      </h2>
      <p className="muted">
        <strong>{node.data.type}</strong>
        {plugin === undefined
          ? node.data.type === 'supernode'
            ? ' — an instance of a supernode'
            : ' (not a registered plugin type)'
          : ` — ${plugin.description}`}
      </p>
      <fieldset disabled={readOnly} className="plain">
        <div className="row">
          <label>
            Id
            <input aria-label="Node id" value={newId} onChange={(e) => setNewId(e.target.value)} />
          </label>
          {!readOnly && (
            <button type="button" onClick={rename} disabled={newId.trim() === node.id}>
              Rename
            </button>
          )}
        </div>
      </fieldset>
      {problems.length > 0 && (
        <div className="error-box" role="alert">
          {problems.join(' ')}
        </div>
      )}
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
      <Wiring node={node} nodes={props.nodes} edges={props.edges} readOnly={readOnly} onWire={props.onWire} />
      {supernodeName !== undefined && (
        <SupernodeInside name={supernodeName} def={supernodes.get(supernodeName)} />
      )}
      <fieldset disabled={readOnly} className="plain">
        <label>
          Shared config (config_ref)
          <ReferenceSelect
            kind="plugin-configs"
            label="config_ref"
            type={node.data.type}
            value={configRef}
            onChange={(ref) => edit(node.data.config ?? null, ref, 'config_ref')}
          />
        </label>
      </fieldset>
      <div className="segmented" role="tablist" aria-label="Config editor">
        <button
          type="button"
          role="tab"
          aria-selected={mode === 'form'}
          disabled={plugin === undefined}
          onClick={() => setMode('form')}
        >
          Form
        </button>
        <button
          type="button"
          role="tab"
          aria-selected={mode === 'raw'}
          onClick={() => {
            setRawVersion((v) => v + 1);
            setMode('raw');
          }}
        >
          YAML / JSON
        </button>
      </div>
      {mode === 'form' && plugin !== undefined ? (
        <SchemaForm
          plugin={plugin}
          config={node.data.config}
          hasConfigRef={configRef !== undefined}
          readOnly={readOnly}
          onChange={(config, field) => edit(config, configRef, field)}
        />
      ) : (
        <RawEditor
          key={rawVersion}
          label="Node config"
          value={node.data.config ?? {}}
          readOnly={readOnly}
          applyLabel="Apply config"
          onApply={applyRaw}
        />
      )}
      {applied && mode === 'raw' && <div className="notice">Applied to the graph. Save to make it live.</div>}
      {!readOnly && (
        <div className="buttons">
          <button type="button" className="danger" onClick={() => onDelete(node.id)}>
            Delete node
          </button>
        </div>
      )}
    </div>
  );
}
