import { useEffect, useRef } from 'react';

const checks = new Set<() => boolean>();

/** Whether any editor on screen has unsaved changes. */
export const hasUnsaved = (): boolean => [...checks].some((check) => check());

export const LEAVE = 'There are unsaved changes. Leave and discard them?';

/** Asks before discarding unsaved changes; true when there are none or the user agrees. */
export const confirmDiscard = (dirty: boolean = hasUnsaved()): boolean => !dirty || window.confirm(LEAVE);

/**
 * While `dirty`, leaving the view (a link, the back button, closing the tab)
 * asks first (use-hash-route.ts reads hasUnsaved).
 */
export function useUnsavedGuard(dirty: boolean): void {
  const ref = useRef(dirty);
  ref.current = dirty;
  useEffect(() => {
    const check = () => ref.current;
    checks.add(check);
    return () => {
      checks.delete(check);
    };
  }, []);
}
