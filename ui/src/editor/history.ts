import { useCallback, useRef, useState } from 'react';
import type { PolicyEdge, PolicyMeta, PolicyNode } from './graph.js';

export interface Snapshot {
  nodes: PolicyNode[];
  edges: PolicyEdge[];
  meta: PolicyMeta;
}

/** Edits of one field closer together than this undo as one step (typing a word is one edit). */
const COALESCE_MS = 1500;
const LIMIT = 200;

/**
 * Undo/redo over whole-graph snapshots. Call `record()` just before a change;
 * `record(key)` with the same key within COALESCE_MS adds no new step.
 */
export function useHistory(current: () => Snapshot, restore: (s: Snapshot) => void) {
  const past = useRef<Snapshot[]>([]);
  const future = useRef<Snapshot[]>([]);
  const last = useRef<{ key: string | undefined; at: number }>({ key: undefined, at: 0 });
  const [, setVersion] = useState(0);
  const bump = () => setVersion((v) => v + 1);

  const record = useCallback(
    (key?: string) => {
      const now = Date.now();
      if (key !== undefined && key === last.current.key && now - last.current.at < COALESCE_MS) {
        last.current.at = now;
        return;
      }
      last.current = { key, at: now };
      past.current = [...past.current.slice(-LIMIT + 1), current()];
      future.current = [];
      bump();
    },
    [current],
  );

  const undo = useCallback(() => {
    const prev = past.current.at(-1);
    if (prev === undefined) return;
    past.current = past.current.slice(0, -1);
    future.current = [...future.current, current()];
    last.current = { key: undefined, at: 0 };
    restore(prev);
    bump();
  }, [current, restore]);

  const redo = useCallback(() => {
    const next = future.current.at(-1);
    if (next === undefined) return;
    future.current = future.current.slice(0, -1);
    past.current = [...past.current, current()];
    last.current = { key: undefined, at: 0 };
    restore(next);
    bump();
  }, [current, restore]);

  const reset = useCallback(() => {
    past.current = [];
    future.current = [];
    bump();
  }, []);

  return { record, undo, redo, reset, canUndo: past.current.length > 0, canRedo: future.current.length > 0 };
}
