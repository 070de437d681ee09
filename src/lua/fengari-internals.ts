import { lua, type LuaState } from 'fengari';

/**
 * Places where src/lua reads fengari 0.1.5's JS objects rather than its Lua
 * API: two for speed, and one (dropMessageHandler) because the API cannot
 * raise past a message handler. Each checks the shape it expects and does
 * nothing (or answers conservatively) when it finds another. chunk-shape.ts
 * is one more such place. The Lua worker's watchdog bounds a run whatever
 * these find.
 */

/** A stack length V8 keeps as a fast array however many slots are empty (its sparseness check starts above 64). */
const FAST_STACK_LENGTH = 60;

/**
 * fengari keeps a thread's stack in a JS array, deletes the slots it pops and
 * grows the array by setting its length. Once the array is longer than V8's
 * sparseness threshold and mostly holes, V8 turns it into a dictionary and
 * every push and pop of every call gets several times slower. The sandbox
 * setup alone grows the stack to 80, so between calls (nothing on the stack,
 * no call in progress) the stack goes back to a fresh array of
 * FAST_STACK_LENGTH when it has grown. A state of another shape is left alone.
 */
export function compactStack(L: LuaState): void {
  const state = L as unknown as {
    stack?: unknown;
    top?: unknown;
    stack_last?: unknown;
    ci?: { top?: unknown } | null;
    base_ci?: unknown;
  };
  const stack = state.stack;
  if (!Array.isArray(stack) || stack.length <= FAST_STACK_LENGTH) return;
  const { top, stack_last: last } = state;
  if (typeof top !== 'number' || typeof last !== 'number' || top > 1 || state.ci !== state.base_ci) return;
  const extra = stack.length - last;
  if (extra < 0 || extra >= FAST_STACK_LENGTH / 2) return;
  const fresh: unknown[] = new Array(FAST_STACK_LENGTH);
  for (let i = 0; i < top; i++) fresh[i] = stack[i];
  const newLast = FAST_STACK_LENGTH - extra;
  state.stack = fresh;
  state.stack_last = newLast;
  const ci = state.ci;
  if (ci !== null && ci !== undefined && typeof ci.top === 'number' && ci.top > newLast) ci.top = newLast;
}

/**
 * A check that the table at `idx` is empty without a Lua API call: fengari
 * 0.1.5 keeps a table's live entries in a Map named `strong`. Any other shape
 * answers "not empty", which only costs a `next` in the caller.
 */
export function emptinessProbe(L: LuaState, idx: number): () => boolean {
  const entries = (lua.lua_topointer(L, idx) as { strong?: unknown } | null)?.strong;
  return entries instanceof Map ? () => entries.size === 0 : () => false;
}

/**
 * Clears the thread's message handler (fengari 0.1.5 keeps it in
 * `L.errfunc`), so the error about to be raised goes straight to the
 * enclosing protected call. `lua_pcall` restores the field when it returns,
 * so only the error raised now skips the handler. A state of another shape
 * is left alone.
 */
export function dropMessageHandler(L: LuaState): void {
  const state = L as unknown as { errfunc?: unknown };
  if (typeof state.errfunc === 'number') state.errfunc = 0;
}
