import { useEffect, useMemo, useState } from 'react';
import { parse } from 'yaml';
import { describe, getJson, getText } from '../api.js';
import type { PolicyConfig } from '../types.js';
import { DiffCanvas } from './diff-canvas.js';
import { countsText, diffGraphs } from './graph-diff.js';
import type { GraphKind } from './graph-kind.js';
import type { Area } from './layout.js';

/** One entry of GET /api/config/history (docs/config-as-code.md#history). */
export interface HistoryEntry {
  version: number;
  time: string;
  user: string | null;
  source: string;
  summary: string;
  sha256: string;
}

/** `current` stands for the graph in the editor, unsaved edits included. */
type Side = number | 'current';

interface Props {
  name: string;
  kind: GraphKind;
  /** The graph as edited now. */
  current: () => PolicyConfig;
  area: Area;
}

/** The policy (or supernode) `name` in a version's gateway.yaml; undefined where it did not exist. */
function graphIn(yamlText: string, kind: GraphKind, name: string): PolicyConfig | undefined {
  const doc = parse(yamlText) as Record<string, unknown> | null;
  const list = doc?.[kind];
  return Array.isArray(list) ? (list as PolicyConfig[]).find((p) => p.name === name) : undefined;
}

const sideLabel = (s: Side) => (s === 'current' ? 'the editor' : `version ${s}`);

/**
 * The History view (issue 34 item 2): the configuration's versions and a
 * graph diff of this policy between two of them (or a version and the
 * editor's graph), in place of the canvas. docs/editor.md#history.
 */
export function ConfigHistory({ name, kind, current, area }: Props) {
  const [versions, setVersions] = useState<HistoryEntry[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [from, setFrom] = useState<Side | undefined>();
  const [to, setTo] = useState<Side | undefined>();
  const [graphs, setGraphs] = useState<ReadonlyMap<number, PolicyConfig | undefined>>(new Map());

  useEffect(() => {
    getJson<{ versions: HistoryEntry[] }>('/api/config/history').then(
      ({ versions: list }) => {
        setVersions(list);
        // Newest first: by default the latest version against the one before it.
        setTo(list[0]?.version ?? 'current');
        setFrom(list[1]?.version ?? list[0]?.version);
      },
      (err: unknown) => setError(`History unavailable: ${describe(err)}`),
    );
  }, []);

  useEffect(() => {
    for (const side of [from, to]) {
      if (typeof side !== 'number' || graphs.has(side)) continue;
      getText(`/api/config/history/${side}`).then(
        (text) => setGraphs((g) => new Map(g).set(side, graphIn(text, kind, name))),
        (err: unknown) => setError(`Version ${side} unavailable: ${describe(err)}`),
      );
    }
  }, [from, to, graphs, kind, name]);

  const graphOf = (side: Side | undefined): PolicyConfig | undefined | null =>
    side === undefined ? null : side === 'current' ? current() : graphs.has(side) ? graphs.get(side) : null;
  const before = graphOf(from);
  const after = graphOf(to);
  const ready = before !== null && after !== null;
  // Recomputed when a side or its content changes; `current()` is read once per pair.
  const diff = useMemo(() => (ready ? diffGraphs(before, after) : undefined), [ready, from, to, graphs]);

  const choose = (label: string, value: Side | undefined, set: (s: Side) => void) => (
    <label>
      {label}
      <select
        aria-label={label}
        value={value === undefined ? '' : String(value)}
        onChange={(e) => set(e.target.value === 'current' ? 'current' : Number(e.target.value))}
      >
        {(versions ?? []).map((v) => (
          <option key={v.version} value={v.version}>
            v{v.version} · {v.source} · {new Date(v.time).toLocaleString()}
          </option>
        ))}
        <option value="current">the editor (unsaved edits included)</option>
      </select>
    </label>
  );

  return (
    <>
      <DiffCanvas diff={diff} area={area} id={`${String(from)}:${String(to)}`} />
      <aside className="side history-side" aria-label="History">
        <h2>History of {name}</h2>
        {error !== undefined && (
          <div className="error-box" role="alert">
            {error}
          </div>
        )}
        {versions === undefined && error === undefined && <p className="muted">Loading…</p>}
        {versions !== undefined && (
          <>
            <fieldset className="plain">
              {choose('From', from, setFrom)}
              {choose('To', to, setTo)}
            </fieldset>
            {diff !== undefined && (
              <section className="diff-summary" aria-label="Changes" aria-live="polite">
                <h3>
                  {sideLabel(from ?? 'current')} → {sideLabel(to ?? 'current')}
                  {before === undefined && ` (no ${kind === 'policies' ? 'policy' : 'supernode'} before)`}
                  {after === undefined && ' (deleted)'}
                </h3>
                <p>
                  <span className="legend diff-added">added</span>{' '}
                  <span className="legend diff-removed">removed</span>{' '}
                  <span className="legend diff-changed">changed</span>
                </p>
                <p>
                  Nodes: {countsText(diff.nodes)}. Edges: {countsText(diff.edges)}.
                </p>
                <ul>
                  {diff.nodes
                    .filter((n) => n.change !== 'same')
                    .map((n) => (
                      <li key={n.id} className={`diff-${n.change}`}>
                        {n.change} node <code>{n.id}</code>
                        {n.fields.length > 0 && `: ${n.fields.join(', ')}`}
                      </li>
                    ))}
                  {diff.edges
                    .filter((e) => e.change !== 'same')
                    .map((e) => (
                      <li key={`${e.from} ${e.to}`} className={`diff-${e.change}`}>
                        {e.change} edge <code>{`${e.from} → ${e.to}`}</code>
                      </li>
                    ))}
                  {diff.meta.map((m) => (
                    <li key={m} className="diff-changed">
                      changed {m}
                    </li>
                  ))}
                </ul>
              </section>
            )}
            <table className="list history-list" aria-label="Versions">
              <thead>
                <tr>
                  <th>Version</th>
                  <th>When</th>
                  <th>What</th>
                </tr>
              </thead>
              <tbody>
                {versions.map((v) => (
                  <tr key={v.version} data-version={v.version}>
                    <td>v{v.version}</td>
                    <td>
                      {new Date(v.time).toLocaleString()}
                      <br />
                      <span className="muted">
                        {v.source}
                        {v.user === null ? '' : ` · ${v.user}`}
                      </span>
                    </td>
                    <td>{v.summary}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </aside>
    </>
  );
}
