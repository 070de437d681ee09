import { useCallback, useEffect, useRef, useState } from 'react';

/** Edits of one field closer together than this undo as one step (typing a word is one edit). */
const COALESCE_MS = 1500;
const LIMIT = 200;

export interface History {
  /** Call just before a change; the same `key` within COALESCE_MS adds no new step. */
  record: (key?: string) => void;
  undo: () => void;
  redo: () => void;
  reset: () => void;
  canUndo: boolean;
  canRedo: boolean;
}

/**
 * Undo/redo over whole snapshots of an editor's state, the one mechanism
 * every editor of the console uses (graphs, forms, settings).
 */
export function useHistory<S>(current: () => S, restore: (s: S) => void): History {
  const past = useRef<S[]>([]);
  const future = useRef<S[]>([]);
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

  const step = useCallback(
    (from: { current: S[] }, to: { current: S[] }) => {
      const target = from.current.at(-1);
      if (target === undefined) return;
      from.current = from.current.slice(0, -1);
      to.current = [...to.current, current()];
      last.current = { key: undefined, at: 0 };
      restore(target);
      bump();
    },
    [current, restore],
  );
  const undo = useCallback(() => step(past, future), [step]);
  const redo = useCallback(() => step(future, past), [step]);

  const reset = useCallback(() => {
    past.current = [];
    future.current = [];
    last.current = { key: undefined, at: 0 };
    bump();
  }, []);

  return { record, undo, redo, reset, canUndo: past.current.length > 0, canRedo: future.current.length > 0 };
}

export interface Undoable<T> extends History {
  value: T;
  /** A change: one undo step, or part of the last one when `key` (a field name) repeats. */
  set: (next: T, key?: string) => void;
  /** A new starting point (a load or a save): no history, nothing unsaved. */
  load: (value: T) => void;
  /** Whether the value differs from the last load. */
  dirty: boolean;
}

/** A value with undo/redo and an unsaved flag: the state of a form editor. */
export function useUndoable<T>(initial: T): Undoable<T> {
  const [value, setValue] = useState(initial);
  const [base, setBase] = useState(() => JSON.stringify(initial));
  const ref = useRef(value);
  ref.current = value;
  const current = useCallback(() => ref.current, []);
  const history = useHistory<T>(current, setValue);
  const { record, reset } = history;
  const set = useCallback(
    (next: T, key?: string) => {
      record(key);
      ref.current = next;
      setValue(next);
    },
    [record],
  );
  const load = useCallback(
    (next: T) => {
      ref.current = next;
      setValue(next);
      setBase(JSON.stringify(next));
      reset();
    },
    [reset],
  );
  return { ...history, value, set, load, dirty: JSON.stringify(value) !== base };
}

/**
 * Ctrl+Z / Ctrl+Shift+Z (Ctrl+Y, ⌘ on a Mac) and Ctrl+S for the editor on
 * screen. A raw YAML/JSON box keeps the browser's own text undo.
 */
export function useEditorKeys(keys: {
  undo: () => void;
  redo: () => void;
  save?: () => void;
  enabled: boolean;
}) {
  const ref = useRef(keys);
  ref.current = keys;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (!(event.ctrlKey || event.metaKey) || !ref.current.enabled) return;
      const key = event.key.toLowerCase();
      if (key === 's' && ref.current.save !== undefined) {
        event.preventDefault();
        ref.current.save();
      } else if ((key === 'z' || key === 'y') && !(event.target instanceof HTMLTextAreaElement)) {
        event.preventDefault();
        if (key === 'y' || event.shiftKey) ref.current.redo();
        else ref.current.undo();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}
